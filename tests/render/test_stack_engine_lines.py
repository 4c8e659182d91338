"""A search across stacks names each part's engine: the lines that say which stack chose which engine, and the rows
that name the engine when a plan list mixes them (plan infer without --engine: MindIE on Ascend, vLLM on CUDA)."""

from __future__ import annotations

from gpuplan.render.report_text import engine_default_lines, infer_rows

SOURCE = "Huawei's serving stack on Ascend is MindIE"


def test_a_stack_whose_engine_is_not_vllm_is_named_in_both_languages() -> None:
    across = {"engine": "vllm", "source": "engines.yaml default_engine",
              "by_stack": {"cann": {"engine": "mindie", "source": SOURCE}}}
    # across stacks one short line (the README question's answer opened with MindIE's whole source text, though no
    # Ascend part was in question); the sources stay in the JSON
    (en,) = engine_default_lines(across, "en")
    assert en.startswith("Engines (none named") and en.endswith("vllm on the other parts; mindie on the cann parts")
    assert SOURCE not in en
    (zh,) = engine_default_lines(across, "zh")
    assert "mindie" in zh and "cann" in zh and "默认引擎" in zh
    # searched alone, the stack's engine is named with its source
    (alone,) = engine_default_lines({"engine": "mindie", "stack": "cann", "source": SOURCE}, "en")
    assert alone.startswith("Engine: mindie") and SOURCE in alone
    # vLLM chosen on CUDA alone says nothing (it is the general default); no record, no line
    assert engine_default_lines({"engine": "vllm", "stack": "cuda", "source": "x"}, "en") == []
    assert engine_default_lines(None, "en") == []


def _row(acc: str, engine: str) -> dict[str, object]:
    return {"accelerator": acc, "devices": 1, "replicas": 1, "layout": "tp1 pp1 ep1", "weights": "int8",
            "engine": engine, "usd_per_hour": 1.0, "usd_per_million_tokens": 0.1, "ttft_p99_s": 0.5,
            "tpot_p99_s": 0.05, "utilization": 0.5, "tenancy": "shared"}


def test_rows_name_the_engine_only_when_the_list_mixes_them() -> None:
    _, mixed = infer_rows([_row("a800-sxm4-80gb", "vllm"), _row("ascend-910b2", "mindie")], "en")
    assert [r[4] for r in mixed] == ["int8 (vllm)", "int8 (mindie)"]
    _, one = infer_rows([_row("a800-sxm4-80gb", "vllm"), _row("h20-96gb", "vllm")], "en")
    assert [r[4] for r in one] == ["int8", "int8"]
