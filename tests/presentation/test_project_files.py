"""``roboreward files``: the schema, confs and model files a pip install needs, equal to the repository's."""

from pathlib import Path

import pytest

from helm_roboreward import cli
from helm_roboreward.presentation.project_files import generated_texts
from tests.helpers.sample import REPO


def test_generated_files_are_the_repositorys() -> None:
    texts = generated_texts()
    assert sorted(texts) == ["prod_env/model_deployments.yaml", "prod_env/model_metadata.yaml",
                             "run_specs/roboreward.conf", "run_specs/roboreward_sample.conf",
                             "static/schema_roboreward.yaml"]
    for relative, text in texts.items():
        assert (REPO / relative).read_text(encoding="utf-8") == text, f"{relative} is out of date: run roboreward files"


def test_files_command_writes_then_keeps_then_refuses_then_forces(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["files", "--out", str(tmp_path)]) == 0
    assert "5 written, 0 already up to date" in capsys.readouterr().out
    assert cli.main(["files", "--out", str(tmp_path)]) == 0
    assert "0 written, 5 already up to date" in capsys.readouterr().out
    conf = tmp_path / "run_specs" / "roboreward.conf"
    conf.write_text("# my own entries\n", encoding="utf-8")
    (tmp_path / "static" / "schema_roboreward.yaml").unlink()
    assert cli.main(["files", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(conf) in err and "--force" in err and "Traceback" not in err
    assert conf.read_text(encoding="utf-8") == "# my own entries\n"  # nothing written
    assert not (tmp_path / "static" / "schema_roboreward.yaml").exists()
    assert cli.main(["files", "--out", str(tmp_path), "--force"]) == 0
    assert "2 written, 3 already up to date" in capsys.readouterr().out
    assert conf.read_text(encoding="utf-8") == generated_texts()["run_specs/roboreward.conf"]
