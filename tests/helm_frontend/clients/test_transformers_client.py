"""TransformersQwen3VLClient with the real transformers code on CPU and a tiny random-weight Qwen3-VL.

The checkpoint is built once per session by tests/helpers/tiny_qwen3vl.py (dense, and a MoE counterpart); nothing of
transformers is mocked: the real sample mp4s are decoded by the client's video decoder (torchcodec inside the
Qwen3-VL processor where it loads; PyAV where it cannot, the processor still choosing the frames), and the real
model classes generate. Checked: the answer and its provenance, the
one-message layout, sampling with the checkpoint's generation config (seeded, so reproducible) and
greedy decoding against ``model.generate`` run here, one load shared by threads and client instances,
HELM's cache keyed by media bytes, the MoE class and failures (a real ``helm-run`` end to end:
tests/integration/test_transformers_end_to_end.py). Nothing here needs FFmpeg's system libraries; that the two
decoders give the model the same inputs is tests/helm_frontend/clients/test_video_decoders.py.
"""

import json
import os
import re
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import av
import pytest
import torch
import transformers
from helm.common.cache import BlackHoleCacheConfig, CacheConfig, SqliteCacheConfig
from helm.common.media_object import MediaObject, MultimediaObject
from helm.common.request import Request, RequestResult
from helm.proxy.retry import NonRetriableException
from PIL import Image

from helm_roboreward.helm_frontend.clients.transformers_client import (
    PYAV,
    TORCHCODEC,
    TransformersClientError,
    TransformersQwen3VLClient,
    completion_from,
    torchcodec_usable,
)
from helm_roboreward.protocol.rules import build_prompt
from tests.helpers.harness import (
    SAMPLE,
)
from tests.helpers.sample import rows_of
from tests.helpers.tiny_qwen3vl import ANSWER_LENGTH

SUBSET = "sim_panda"
VIDEO = SAMPLE / rows_of(SUBSET)[0]["file_name"]
OTHER_VIDEO = next(SAMPLE / row["file_name"] for row in rows_of(SUBSET)
                   if (SAMPLE / row["file_name"]).read_bytes() != VIDEO.read_bytes())
TASK = "pick up the red block and drop it in the blue bowl"
PROMPT = build_prompt(TASK)
MAX_TOKENS = 5000
DEPLOYMENT = "transformers/tiny-qwen3-vl"


@pytest.fixture(scope="module")
def tiny(tiny_qwen3vl: Path) -> Path:
    """The session's tiny dense checkpoint (tests/conftest.py)."""
    return tiny_qwen3vl


@pytest.fixture(scope="module")
def tiny_moe(tiny_qwen3vl_moe: Path) -> Path:
    return tiny_qwen3vl_moe


def make_client(folder: Path, cache_config: CacheConfig | None = None, **kwargs: Any) -> TransformersQwen3VLClient:
    return TransformersQwen3VLClient(cache_config=cache_config or BlackHoleCacheConfig(), checkpoint=str(folder),
                                     **kwargs)


def media_request(media: Sequence[MediaObject], max_tokens: int = MAX_TOKENS) -> Request:
    return Request(model="teetone/roboreward-8b", model_deployment=DEPLOYMENT, max_tokens=max_tokens,
                   temperature=0.0, num_completions=1, multimodal_prompt=MultimediaObject(list(media)))


def text_part(text: str = PROMPT) -> MediaObject:
    return MediaObject(content_type="text/plain", text=text)


def video_part(path: Path) -> MediaObject:
    return MediaObject(content_type="video/mp4", location=str(path))


def video_request(path: Path = VIDEO, task: str = TASK) -> Request:
    return media_request([text_part(build_prompt(task)), video_part(path)])


def answer(result: RequestResult) -> str:
    assert result.success, result.error
    (completion,) = result.completions
    return completion.text


def processor_inputs(client: TransformersQwen3VLClient, request: Request) -> Any:
    """What the client feeds generate for ``request`` (its messages through its processor and video decoder)."""
    inputs, processor_kwargs = client.processor_inputs(client.build_messages(request))
    assert processor_kwargs == {"cap_pixels_per_frame": False}
    return inputs


def decode_new(client: TransformersQwen3VLClient, output: torch.Tensor, prompt_length: int) -> str:
    return str(client.load().processor.batch_decode(output[:, prompt_length:], skip_special_tokens=True,
                                                    clean_up_tokenization_spaces=False)[0])


def frame_count_and_rate(path: Path) -> tuple:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        return frames, float(stream.average_rate)


# ------------------------------------------------------------------------------------------ answers


def test_answers_a_sample_video_with_its_provenance(tiny: Path) -> None:
    client = make_client(tiny)
    started = time.monotonic()
    result = client.make_request(video_request())
    seconds = time.monotonic() - started
    text = answer(result)
    finish = result.completions[0].finish_reason
    assert finish is not None
    frames, fps = frame_count_and_rate(VIDEO)
    sampled = min(max(int(frames / fps * 2), 4), 768, frames)  # transformers' Qwen3-VL rule: 2 fps, 4..768
    t, h, w = finish["video_grid_thw"][0]
    print(f"\n{VIDEO.name}: {frames} frames at {fps:g} fps -> {sampled} sampled, grid {t}x{h}x{w}, "
          f"{finish['video_tokens']} video tokens, {finish['prompt_tokens']} prompt tokens, "
          f"{finish['completion_tokens']} completion tokens, {seconds:.2f} s (load included): {text!r}")
    assert finish["video_frames"] == sampled + sampled % 2 == 2 * t  # an odd count repeats the last frame
    assert finish["video_tokens"] == t * h * w // 4 > 0
    assert finish["prompt_tokens"] > finish["video_tokens"] + len(PROMPT) // 2
    assert finish["completion_tokens"] == ANSWER_LENGTH + 1 and finish["reason"] == "stop"
    assert 0 < len(text) <= ANSWER_LENGTH
    assert finish["transformers_version"] == transformers.__version__
    decoder, module = (TORCHCODEC, "torchcodec") if torchcodec_usable() else (PYAV, "av")
    assert finish["video_decoder"] == decoder
    assert finish["video_decoder_version"].split("+")[0] == __import__(module).__version__.split("+")[0]
    assert finish["torch_version"] == torch.__version__
    assert finish["decoding"] == "checkpoint" and isinstance(finish["seed"], int)
    assert finish["model_class"] == "Qwen3VLForConditionalGeneration"
    assert finish["dtype"] == "float32" and finish["device"] == "cpu"
    assert [token.text for token in result.completions[0].tokens] and result.cached is False


def test_the_processor_decoded_the_mp4_up_to_its_last_frame(tiny: Path) -> None:
    client = make_client(tiny)
    inputs = processor_inputs(client, video_request())
    prompt = client.load().processor.tokenizer.decode(inputs["input_ids"][0])
    stamps = [float(s) for s in re.findall(r"<(\d+\.\d) seconds>", prompt)]
    frames, fps = frame_count_and_rate(VIDEO)
    assert len(stamps) == int(inputs["video_grid_thw"][0][0])
    assert stamps == sorted(stamps) and stamps[0] < 1.0
    assert stamps[-1] == pytest.approx((frames - 1) / fps, abs=0.051)  # the final frame is in the last pair
    assert prompt.index(PROMPT) < prompt.index("<|video_pad|>")


def test_one_user_message_with_the_parts_in_prompt_order(tiny: Path, tmp_path: Path) -> None:
    client = make_client(tiny)
    assert client.build_messages(video_request()) == [{"role": "user", "content": [
        {"type": "text", "text": PROMPT}, {"type": "video", "video": str(VIDEO)}]}]
    image = tmp_path / "frame.jpg"
    Image.new("RGB", (96, 64), (200, 40, 40)).save(image)
    mixed = media_request([video_part(VIDEO), text_part("first"), MediaObject(content_type="image/jpeg",
                                                                             location=str(image)), text_part("last")])
    assert client.build_messages(mixed) == [{"role": "user", "content": [
        {"type": "video", "video": str(VIDEO)}, {"type": "text", "text": "first"},
        {"type": "image", "image": str(image)}, {"type": "text", "text": "last"}]}]
    rendered = client.load().processor.apply_chat_template(client.build_messages(mixed), add_generation_prompt=True)
    assert rendered == ("<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>first"
                        "<|vision_start|><|image_pad|><|vision_end|>last<|im_end|>\n<|im_start|>assistant\n")
    finish = make_client(tiny).make_request(mixed).completions[0].finish_reason
    assert finish is not None and finish["images"] == 1 and finish["image_tokens"] > 0 and finish["video_tokens"] > 0


def test_reasoning_in_think_tags_goes_to_thinking() -> None:
    generated = {"text": "<think>the cube is in the bowl</think>\nANSWER: 5", "tokens": [], "completion_tokens": 9,
                 "reason": "stop", "seed": 1}
    completion = completion_from(generated, {"prompt_tokens": 100, "provenance": {"decoding": "checkpoint"}})
    assert completion.text == "ANSWER: 5"
    assert completion.thinking is not None and completion.thinking.text == "the cube is in the bowl"
    assert completion.finish_reason == {"reason": "stop", "prompt_tokens": 100, "completion_tokens": 9, "seed": 1,
                                        "decoding": "checkpoint"}


# ----------------------------------------------------------------------------------------- decoding


def test_checkpoint_decoding_samples_with_the_generation_config_reproducibly(tiny: Path) -> None:
    request = video_request()
    first = make_client(tiny).make_request(request)
    again = make_client(tiny).make_request(request)  # no cache: generated again
    assert answer(first) == answer(again) and not first.cached and not again.cached
    finish = first.completions[0].finish_reason
    assert finish is not None
    client = make_client(tiny)
    model = client.load().model
    assert model.generation_config.do_sample is True and model.generation_config.temperature == 0.7
    inputs = processor_inputs(client, request)
    torch.manual_seed(finish["seed"])
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=MAX_TOKENS)  # the checkpoint's sampling, this seed
    assert decode_new(client, output, inputs["input_ids"].shape[1]) == answer(first)
    by_seed = {answer(make_client(tiny, seed=seed).make_request(request)) for seed in range(6)}
    print(f"\nsampled answers for seeds 0..5: {sorted(by_seed)}")
    assert len(by_seed) > 1, "decoding=checkpoint should sample"


def test_greedy_decoding_equals_generate_without_sampling(tiny: Path) -> None:
    client = make_client(tiny, decoding="greedy")
    request = video_request()
    greedy = answer(client.make_request(request))
    assert answer(make_client(tiny, decoding="greedy", seed=7).make_request(request)) == greedy
    inputs = processor_inputs(client, request)
    with torch.inference_mode():
        output = client.load().model.generate(**inputs, max_new_tokens=MAX_TOKENS, do_sample=False)
    assert decode_new(client, output, inputs["input_ids"].shape[1]) == greedy
    finish = client.make_request(request).completions[0].finish_reason
    assert finish is not None and finish["decoding"] == "greedy" and finish["seed"] is None


@pytest.mark.filterwarnings("ignore:Unfeasible length constraints")  # the tiny model's min_new_tokens exceeds 3
def test_length_is_reported_when_the_budget_runs_out(tiny: Path) -> None:
    result = make_client(tiny).make_request(media_request([text_part(), video_part(VIDEO)], max_tokens=3))
    finish = result.completions[0].finish_reason
    assert finish is not None and finish["reason"] == "length" and finish["completion_tokens"] == 3


# ----------------------------------------------------------------------------------- sharing, cache


def test_one_load_shared_by_threads_and_client_instances(tiny: Path) -> None:
    tasks = [f"{TASK} {index}" for index in range(8)]
    alone = [answer(make_client(tiny).make_request(video_request(task=task))) for task in tasks]
    clients = [make_client(tiny), make_client(tiny)]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda i: clients[i % 2].make_request(video_request(task=tasks[i])), range(8)))
    print(f"\n8 concurrent requests through 2 clients: {time.monotonic() - started:.2f} s")
    assert [answer(result) for result in results] == alone  # same answers as one at a time: no interleaving
    assert clients[0].load() is clients[1].load()
    assert clients[0].registry_key == clients[1].registry_key


def test_cache_hits_on_the_same_request_and_misses_on_new_video_bytes(tiny: Path, tmp_path: Path) -> None:
    video = tmp_path / "media" / "clip.mp4"
    video.parent.mkdir()
    shutil.copyfile(VIDEO, video)
    cache = SqliteCacheConfig(str(tmp_path / "cache.sqlite"))
    client = make_client(tiny, cache_config=cache)
    first = client.make_request(video_request(video))
    second = make_client(tiny, cache_config=cache).make_request(video_request(video))
    assert (first.cached, second.cached) == (False, True) and answer(first) == answer(second)
    key = json.dumps(client.cache_key(video_request(video), client.build_messages(video_request(video))))
    assert str(video) not in key and "media" not in key and "clip" not in key
    shutil.copyfile(OTHER_VIDEO, video)  # same path, other bytes
    changed = client.make_request(video_request(video))
    assert changed.success and changed.cached is False


def test_cache_key_follows_the_local_checkpoint(tiny: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-checkpoint"
    shutil.copytree(tiny, other)
    request = video_request()
    client = make_client(tiny)
    key = client.cache_key(request, client.build_messages(request))
    files = key["checkpoint"]["files"]
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} <= set(files)
    assert key["video_decoder"] == client.video_decoder and key["top_logprobs"] == 0
    copied = make_client(other)
    copied_key = copied.cache_key(request, copied.build_messages(request))["checkpoint"]
    assert copied_key == {"path": str(other), "files": files}
    config = json.loads((other / "generation_config.json").read_text())
    (other / "generation_config.json").write_text(json.dumps({**config, "temperature": 1.0}))
    changed = make_client(other).cache_key(request, copied.build_messages(request))["checkpoint"]["files"]
    assert changed["generation_config.json"] != files["generation_config.json"]
    assert changed["config.json"] == files["config.json"]
    for options in ({"decoding": "greedy"}, {"seed": 1}, {"top_logprobs": 5}, {"dtype": "float16"},
                    {"attn_implementation": "eager"}):
        variant = make_client(tiny, **options)
        assert variant.cache_key(request, variant.build_messages(request)) != key, options
    text_only = media_request([text_part()])
    assert "video_decoder" not in client.cache_key(text_only, client.build_messages(text_only))


def retrain(folder: Path, seed: int) -> None:
    """Other weights in ``folder``, same config: every float tensor of model.safetensors moved by random noise."""
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    generator = torch.Generator().manual_seed(seed)
    tensors = {name: tensor + 0.5 * torch.randn(tensor.shape, generator=generator) if tensor.is_floating_point()
               else tensor for name, tensor in load_file(weights).items()}
    save_file(tensors, weights, metadata={"format": "pt"})


def test_deployments_of_different_local_checkpoints_never_share_an_answer(tiny: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(tiny, first)
    shutil.copytree(tiny, second)
    retrain(second, seed=1)  # the same config.json and generation_config.json, other weights
    cache = SqliteCacheConfig(str(tmp_path / "cache.sqlite"))
    request = video_request()
    answers = [make_client(folder, cache_config=cache).make_request(request) for folder in (first, second)]
    assert [result.cached for result in answers] == [False, False]
    assert make_client(second, cache_config=cache).make_request(request).cached is True
    before = make_client(first)
    retrain(first, seed=2)  # weights replaced in place, as a training job writing to one folder does
    after = make_client(first, cache_config=cache)
    assert after.registry_key != before.registry_key  # the new weights are loaded, not the old model reused
    replaced = after.make_request(request)
    assert replaced.success and replaced.cached is False
    assert make_client(first, cache_config=cache).make_request(request).cached is True


def test_weight_shards_enter_the_key_by_size_and_modification_time(tiny: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from helm_roboreward.helm_frontend.clients import transformers_client as checkpoint_files

    folder = tmp_path / "sharded"
    shutil.copytree(tiny, folder)
    (folder / ".cache").mkdir()
    (folder / ".cache" / "download.lock").write_text("hub bookkeeping", encoding="utf-8")
    weights = folder / "model.safetensors"
    monkeypatch.setattr(checkpoint_files, "DIGESTED_FILE_BYTES", weights.stat().st_size - 1)
    files = checkpoint_files.checkpoint_fingerprint(str(folder))
    assert files["model.safetensors"] == [weights.stat().st_size, weights.stat().st_mtime_ns]
    assert len(files["config.json"]) == 64 and not any(name.startswith(".") for name in files)
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1))
    assert checkpoint_files.checkpoint_fingerprint(str(folder))["model.safetensors"] != files["model.safetensors"]


# ---------------------------------------------------------------------------------------- MoE, errors


def test_moe_checkpoint_loads_the_moe_class_and_generates(tiny_moe: Path) -> None:
    client = make_client(tiny_moe)
    assert client.model_class == "Qwen3VLMoeForConditionalGeneration"
    result = client.make_request(video_request())
    assert type(client.load().model).__name__ == "Qwen3VLMoeForConditionalGeneration"
    finish = result.completions[0].finish_reason
    assert answer(result) and finish is not None and finish["model_class"] == "Qwen3VLMoeForConditionalGeneration"


def test_a_file_that_is_not_a_video_is_a_non_fatal_failure(tiny: Path, tmp_path: Path) -> None:
    fake = tmp_path / "notes.mp4"
    fake.write_text("this is not a video\n", encoding="utf-8")
    result = make_client(tiny).make_request(video_request(fake))
    assert result.success is False and result.completions == []
    assert result.error_flags is not None
    assert (result.error_flags.is_fatal, result.error_flags.is_retriable) == (False, False)
    assert str(fake) in (result.error or "")
    print(f"\nerror for a text file named .mp4: {result.error}")


def test_media_the_client_cannot_send_is_a_non_fatal_failure(tiny: Path, tmp_path: Path) -> None:
    audio = tmp_path / "sound.wav"
    audio.write_bytes(b"RIFF0000WAVE")
    result = make_client(tiny).make_request(media_request([text_part(), MediaObject(content_type="audio/wav",
                                                                                    location=str(audio))]))
    assert result.success is False and "audio/wav" in (result.error or "")
    assert result.error_flags is not None and result.error_flags.is_fatal is False


def test_a_folder_without_config_fails_at_construction(tmp_path: Path) -> None:
    (tmp_path / "weights").mkdir()
    with pytest.raises(TransformersClientError, match="has no config.json") as raised:
        make_client(tmp_path / "weights")
    assert isinstance(raised.value, NonRetriableException)  # HELM does not retry it for minutes
    with pytest.raises(TransformersClientError, match="does not exist"):
        make_client(tmp_path / "missing")


def test_missing_weights_fail_at_the_first_load_for_every_request(tiny: Path, tmp_path: Path) -> None:
    folder = tmp_path / "config-only"
    folder.mkdir()
    shutil.copyfile(tiny / "config.json", folder / "config.json")
    client = make_client(folder)  # the config is fine: construction passes
    errors = []
    for _ in range(2):  # raised (HELM fails the run), not a per-request failure; the second without reloading
        with pytest.raises(TransformersClientError, match="cannot load Qwen3VLForConditionalGeneration") as raised:
            client.make_request(video_request())
        assert str(folder) in str(raised.value)
        errors.append(raised.value)
    assert errors[0] is errors[1]  # the remembered failure, not a second try


def test_another_model_type_fails_at_construction(tmp_path: Path) -> None:
    folder = tmp_path / "qwen2-vl"
    transformers.Qwen2VLConfig().save_pretrained(folder)
    with pytest.raises(TransformersClientError, match="model_type 'qwen2_vl'"):
        make_client(folder)


def test_bad_arguments_fail_at_construction(tiny: Path) -> None:
    with pytest.raises(ValueError, match="decoding"):
        make_client(tiny, decoding="beam")
    with pytest.raises(ValueError, match="dtype"):
        make_client(tiny, dtype="int4")
    with pytest.raises(ValueError, match="video_decoder"):
        make_client(tiny, video_decoder="decord")


def test_torchcodec_forced_where_it_cannot_load_fails_at_construction(tiny: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from helm_roboreward.helm_frontend.clients import transformers_client as video_decoders

    monkeypatch.setattr(video_decoders, "torchcodec_usable", lambda: False)  # as on a machine without FFmpeg
    with pytest.raises(TransformersClientError, match="video_decoder='torchcodec', but torchcodec .* cannot load "
                                                      "FFmpeg.*apt-get install ffmpeg.*video_decoder='auto'"):
        make_client(tiny, video_decoder="torchcodec")
    assert make_client(tiny).video_decoder == PYAV  # auto
