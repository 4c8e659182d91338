"""Length distributions (fixed, uniform, histogram files) and request streams (Poisson, traces)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.errors import InputError
from gpuplan.simulate import LengthDist, parse_length_dist, poisson_workload, read_trace


def test_parse_fixed_and_uniform() -> None:
    assert parse_length_dist(512) == LengthDist.fixed(512)
    assert parse_length_dist("fixed:7").mean == 7
    u = parse_length_dist("uniform:100-300")
    assert (u.mean, u.max) == (200.0, 300)
    x = u.sample(np.random.default_rng(0), 20_000)
    assert x.min() >= 100 and x.max() <= 300 and abs(x.mean() - 200) < 2


@pytest.mark.parametrize("bad", ["0", "-5", "uniform:0-10", "uniform:10-5", "normal:3", "abc", "hist:/no/such.csv"])
def test_parse_rejects_bad_lengths(bad: str) -> None:
    with pytest.raises(InputError):
        parse_length_dist(bad, field="input-len", files=True)


@pytest.mark.parametrize("bad", ["bins:", "bins:0-10=1", "bins:10-5=1", "bins:5=nan", "bins:5=inf", "bins:5=-1",
                                 "bins:1-99999999999=1", "bins:x=1", "bins:" + ",".join(["5=1"] * 257)])
def test_inline_bins_reject_bad_values(bad: str) -> None:
    with pytest.raises(InputError):
        parse_length_dist(bad, field="input-dist")


def test_inline_bins_equal_the_same_histogram_file(tmp_path: Path) -> None:
    f = tmp_path / "bins.csv"
    f.write_text("low,high,weight\n1,99,1\n100,199,3\n", encoding="utf-8")
    a = parse_length_dist(f"hist:{f}", files=True)
    b = parse_length_dist("bins:1-99=1,100-199=3")
    assert (a.low, a.high, a.weight) == (b.low, b.high, b.weight)
    assert a.mean == b.mean == pytest.approx((50.0 + 3 * 149.5) / 4)


def test_without_files_a_path_is_never_opened(tmp_path: Path) -> None:
    f = tmp_path / "h.csv"
    f.write_text("length,weight\n5,1\n", encoding="utf-8")
    with pytest.raises(InputError) as exists:
        parse_length_dist(f"hist:{f}")
    with pytest.raises(InputError) as missing:
        parse_length_dist(f"hist:{tmp_path / 'none.csv'}")
    assert str(exists.value) == str(missing.value) and str(tmp_path) not in str(exists.value)


def test_histogram_files(tmp_path: Path) -> None:
    points = tmp_path / "points.csv"
    points.write_text("length,weight\n100,3\n1000,1\n", encoding="utf-8")
    d = parse_length_dist(f"hist:{points}", files=True)
    assert d.mean == pytest.approx(325.0) and d.max == 1000
    x = d.sample(np.random.default_rng(1), 40_000)
    assert set(np.unique(x).tolist()) == {100, 1000}
    assert (x == 100).mean() == pytest.approx(0.75, abs=0.01)
    bins = tmp_path / "bins.csv"
    bins.write_text("low,high,weight\n1,99,1\n100,199,1\n", encoding="utf-8")
    b = parse_length_dist(f"hist:{bins}", files=True)
    assert b.mean == pytest.approx((50.0 + 149.5) / 2)
    assert b.quantile(0.5) == pytest.approx(99.0)
    broken = tmp_path / "broken.csv"
    broken.write_text("length,weight\nx,1\n", encoding="utf-8")
    with pytest.raises(InputError, match="length histogram"):
        parse_length_dist(f"hist:{broken}", files=True)


def test_poisson_arrivals_are_seeded_and_have_the_rate() -> None:
    kw = {"qps": 4.0, "num_requests": 50_000, "input_len": LengthDist.fixed(10), "output_len": LengthDist.fixed(3)}
    a, b = poisson_workload(seed=3, **kw), poisson_workload(seed=3, **kw)  # type: ignore[arg-type]
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert a.qps == pytest.approx(4.0, rel=0.02)
    gaps = np.diff(a.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential gaps: CV = 1
    with pytest.raises(InputError, match="qps"):
        poisson_workload(seed=0, **{**kw, "qps": 0.0})  # type: ignore[arg-type]


def test_trace_file(tmp_path: Path) -> None:
    f = tmp_path / "trace.csv"
    f.write_text("arrival_s,input_len,output_len\n2.0,10,5\n1.0,20,6\n3.5,30,7\n", encoding="utf-8")
    w = read_trace(f)
    assert w.arrival_s.tolist() == [0.0, 1.0, 2.5]
    assert w.input_len.tolist() == [20, 10, 30]
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,input_len,output_len\n0,0,5\n", encoding="utf-8")
    with pytest.raises(InputError, match="lengths"):
        read_trace(bad)
    with pytest.raises(InputError, match="trace"):
        read_trace(tmp_path / "missing.csv")
