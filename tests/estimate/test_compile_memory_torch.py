"""torch.compile's effect on saved activations, against real PyTorch on the CPU (issue 13, `compile` recipe key).

torchtune's compile=True compiles each transformer layer (training.compile_model) and the loss
(training.compile_loss). AOTAutograd's min-cut partitioner then decides what each layer saves for
backward; `aot_eager_decomp_partition` runs the same partitioner as inductor without generating C++
(inductor gives the same saved set and peaks on the CPU where a compiler exists). One decoder layer of a
tiny Hugging Face model is run compiled and its unique saved storages are summed, as
tests/estimate/test_activations_torch.py does for eager layers.
"""

from __future__ import annotations

import pytest

from gpuplan.estimate.activations import activation_breakdown
from gpuplan.workload.jobs import Layout, TrainingJob

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from gpuplan.validate.torch_probe import TINY_SPECS, build_hf_model  # noqa: E402

pytestmark = pytest.mark.torch

BACKEND = "aot_eager_decomp_partition"


def _layer_saved_bytes(name: str, attn: str, batch: int, seq: int, *, compiled: bool) -> int:
    spec = TINY_SPECS[name]
    model = build_hf_model(spec, attn_implementation=attn)
    layer = model.model.layers[0]
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    torch.manual_seed(0)
    h = torch.randn(batch, seq, spec.hidden_size, dtype=torch.bfloat16, requires_grad=True)
    pos = torch.arange(seq).unsqueeze(0).expand(batch, seq)
    pe = model.model.rotary_emb(h, pos)

    def run(x: torch.Tensor) -> torch.Tensor:
        out = layer(x, position_embeddings=pe, attention_mask=None)
        return out[0] if isinstance(out, tuple) else out

    fn = torch.compile(run, backend=BACKEND) if compiled else run
    fn(h)  # compile outside the measurement
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(h)
    out.float().sum().backward()
    return sum(seen.values())


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2-bias", "qwen3-qknorm"])
@pytest.mark.parametrize(("batch", "seq"), [(2, 256), (1, 96)])
def test_compiled_layer_saves_what_the_estimator_says(name: str, batch: int, seq: int) -> None:
    spec = TINY_SPECS[name]
    measured = _layer_saved_bytes(name, "sdpa", batch, seq, compiled=True)
    job = TrainingJob(seq_len=seq, micro_batch=batch, compile=True)
    estimated = activation_breakdown(spec, job, Layout()).dense_layer_bytes
    print(f"{name} b={batch} s={seq}: measured {measured} estimated {estimated:.0f}")
    assert estimated == pytest.approx(measured, rel=0.03)
    # and compiling saves less than the eager layer, which the eager estimate matches
    eager = _layer_saved_bytes(name, "sdpa", batch, seq, compiled=False)
    assert measured < 0.8 * eager
    assert activation_breakdown(spec, job.model_copy(update={"compile": False}), Layout()).dense_layer_bytes == \
        pytest.approx(eager, rel=0.03)
