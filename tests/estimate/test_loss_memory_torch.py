"""The loss's memory against PyTorch on the CPU (issue 13): full vs torchtune-style chunked cross-entropy.

The PyTorch profiler (profile_memory) records every allocation and free; the peak of their running sum
during the loss's forward pass, beyond the logits that already exist, must equal the estimator's loss
terms (`logits_transient` + saved `log_probs` - the 16-bit logits), and what survives the forward pass
must equal the saved log-probabilities.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.activations import activation_breakdown
from gpuplan.workload.jobs import Layout, TrainingJob
from gpuplan.workload.model_spec import ModelSpec

torch = pytest.importorskip("torch")

T, V = 512, 32000
SPEC = ModelSpec(name="loss-probe", num_layers=1, hidden_size=256, num_heads=4, ffn_hidden_size=512, vocab_size=V)


def _profiled(fn):  # type: ignore[no-untyped-def]
    """(fn's result, peak and final bytes of the running sum of CPU allocations and frees while it ran)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    cur = peak = 0
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if e.name == "[memory]":
            cur += e.cpu_memory_usage
        elif e.self_cpu_memory_usage:
            cur += e.self_cpu_memory_usage
        peak = max(peak, cur)
    return out, peak, cur


def _measured(fn):  # type: ignore[no-untyped-def]
    out, peak, cur = _profiled(fn)  # the loss keeps its autograd graph (the saved tensors) alive until backward
    del out
    return peak, cur


@pytest.mark.parametrize(("loss", "chunks"), [("full", 8), ("chunked", 8), ("chunked", 4)])
def test_loss_peak_and_saved_bytes_match_pytorch(loss: str, chunks: int) -> None:
    f = torch.nn.functional
    logits = torch.randn(T, V, dtype=torch.bfloat16, requires_grad=True)  # the LM head's 16-bit output
    labels = torch.randint(0, V, (T,))

    def run() -> object:
        if loss == "full":  # Hugging Face: CrossEntropyLoss on the upcast logits
            return f.cross_entropy(logits.float(), labels)
        # torchtune CEWithChunkedOutputLoss: each chunk upcast and reduced on its own
        return sum(f.cross_entropy(c.float(), lab, reduction="sum")
                   for c, lab in zip(logits.chunk(chunks), labels.chunk(chunks), strict=True)) / T

    peak, kept = _measured(run)
    job = TrainingJob(method="lora", seq_len=T, micro_batch=1, loss=loss, loss_chunks=chunks)  # type: ignore[arg-type]
    acts = activation_breakdown(SPEC, job, Layout())
    logits_16 = 2 * T * V
    predicted_peak = acts.logits_transient_bytes + acts.last_stage_extra["log_probs"] - logits_16
    assert peak == pytest.approx(predicted_peak, rel=0.02)
    assert kept == pytest.approx(acts.last_stage_extra["log_probs"], rel=0.02)


def _measured_backward(loss: object) -> int:
    _, peak, _ = _profiled(loss.backward)  # type: ignore[attr-defined]
    return int(peak)


@pytest.mark.parametrize("loss", ["full", "chunked"])
def test_compiled_loss_keeps_the_16bit_logits(loss: str) -> None:
    """torchtune compile_loss: the whole loss compiled, or each chunk's upcast + cross-entropy
    (CEWithChunkedOutputLoss.compute_cross_entropy). The partitioner keeps the 16-bit logits and per-token
    statistics; the forward pass allocates nothing beyond them, the backward pass their 16-bit gradient.
    aot_eager_decomp_partition runs inductor's partitioner without a C++ compiler."""
    f = torch.nn.functional
    chunks = 8
    backend = "aot_eager_decomp_partition"
    if loss == "full":
        compiled = torch.compile(lambda x, lab: f.cross_entropy(x.float(), lab), backend=backend)
    else:
        ce = torch.compile(lambda x, lab: f.cross_entropy(x.float(), lab, reduction="sum"), backend=backend)

        def compiled(x, lab):  # type: ignore[no-untyped-def]
            return sum(ce(c, cl) for c, cl in zip(x.chunk(chunks), lab.chunk(chunks), strict=True)) / T

    logits = torch.randn(T, V, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (T,))
    compiled(logits, labels).backward()  # compile outside the measurement
    logits.grad = None
    held: dict[str, object] = {}
    peak, kept = _measured(lambda: held.setdefault("loss", compiled(logits, labels)))
    backward_peak = _measured_backward(held["loss"])

    job = TrainingJob(method="lora", seq_len=T, micro_batch=1, loss=loss, loss_chunks=chunks,  # type: ignore[arg-type]
                      compile=True)
    acts = activation_breakdown(SPEC, job, Layout())
    logits_16 = 2 * T * V
    assert "log_probs" not in acts.last_stage_extra
    saved_beyond_logits = acts.last_stage_extra["saved_logits"] - logits_16
    assert kept == pytest.approx(saved_beyond_logits, abs=0.002 * logits_16)
    assert peak <= 0.01 * logits_16  # no upcast materialised
    assert backward_peak == pytest.approx(acts.logits_transient_bytes, rel=0.02)
    # against eager: the chunked eager loss keeps 4 bytes per logit (fp32 log-probabilities)
    eager = activation_breakdown(SPEC, job.model_copy(update={"compile": False}), Layout())
    assert eager.last_stage_extra["log_probs"] == pytest.approx(2 * logits_16)
