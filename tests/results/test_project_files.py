"""``roboreward files``: the schema, confs and model files a pip install needs, equal to the repository's."""

from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.results.project_files import generated_texts
from tests.helpers.sample import REPO


def test_generated_files_are_the_repositorys() -> None:
    texts = generated_texts()
    assert sorted(texts) == ["prod_env/model_deployments.yaml", "prod_env/model_metadata.yaml",
                             "run_specs/roboreward.conf", "run_specs/roboreward_sample.conf",
                             "run_specs/roboreward_subsets.conf", "static/schema_roboreward.yaml"]
    for relative, text in texts.items():
        assert (REPO / relative).read_text(encoding="utf-8") == text, f"{relative} is out of date: run roboreward files"


def test_files_command_writes_then_keeps_then_refuses_then_forces(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["files", "--out", str(tmp_path)]) == 0
    assert "6 written, 0 already up to date" in capsys.readouterr().out
    assert cli.main(["files", "--out", str(tmp_path)]) == 0
    assert "0 written, 6 already up to date" in capsys.readouterr().out
    conf = tmp_path / "run_specs" / "roboreward.conf"
    conf.write_text("# my own entries\n", encoding="utf-8")
    (tmp_path / "static" / "schema_roboreward.yaml").unlink()
    assert cli.main(["files", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(conf) in err and "--force" in err and "Traceback" not in err
    assert conf.read_text(encoding="utf-8") == "# my own entries\n"  # nothing written
    assert not (tmp_path / "static" / "schema_roboreward.yaml").exists()
    assert cli.main(["files", "--out", str(tmp_path), "--force"]) == 0
    assert "2 written, 4 already up to date" in capsys.readouterr().out
    assert conf.read_text(encoding="utf-8") == generated_texts()["run_specs/roboreward.conf"]


def test_leaderboard_conf_lists_the_published_models_per_subset() -> None:
    from helm_roboreward.protocol.published import LEADERBOARD_MODELS, RETIRED_MODELS
    from helm_roboreward.protocol.rules import OFFICIAL_SUBSETS

    text = generated_texts()["run_specs/roboreward.conf"]
    served = [model for model in LEADERBOARD_MODELS if model not in RETIRED_MODELS]
    assert len(served) == 23 and len(LEADERBOARD_MODELS) == 25
    for subset in OFFICIAL_SUBSETS:
        for model in served:
            assert f'"roboreward:subset={subset.id},model={model}"' in text
    for model in RETIRED_MODELS:
        assert f",model={model}\"" not in text and model in text  # left out, and named with its successor
    assert text.count("description:") == 23 * 23
