"""Storage benchmarks on a given directory: sequential and random reads, and a data-loader test.

* sequential read: a file written (and fsync'ed) into the directory, evicted from the page
  cache with posix_fadvise(DONTNEED), then read in 8 MiB blocks: bytes / time.
* random read: 4 KiB preads at uniformly random aligned offsets of the same (evicted) file,
  one outstanding request (queue depth 1): IOPS = reads / time, throughput = IOPS x 4 KiB.
  Without fadvise (not Linux) the page cache may serve the reads; the record says so.
* data loader: a torch DataLoader with `workers` processes reading fixed-length token
  sequences (uint32) from a memory-mapped file in the directory; tokens/s delivered is
  compared with the target token rate (the plan's data-pipeline figure).
Temporary files are removed afterwards; an unwritable directory fails with a clear message.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from gpuplan.bench.backend import BenchUnavailable
from gpuplan.bench.context import BenchContext
from gpuplan.bench.formulas import gbyte_s

__all__ = ["run_dataloader", "run_storage"]

_BLOCK = 8 * 2**20
_PAGE = 4096


def _check_dir(directory: Path) -> None:
    if not directory.is_dir():
        raise BenchUnavailable(f"--dir {directory}: not a directory")
    if not os.access(directory, os.W_OK):
        raise BenchUnavailable(f"--dir {directory}: not writable (the storage test writes a temporary file there)")


def _write_file(directory: Path, nbytes: int) -> Path:
    try:
        fd, name = tempfile.mkstemp(prefix=".gpuplan-bench-", dir=directory)
    except OSError as exc:
        raise BenchUnavailable(f"--dir {directory}: cannot create a file ({exc.strerror or exc})") from None
    chunk = os.urandom(min(_BLOCK, nbytes))
    try:
        with os.fdopen(fd, "wb") as fh:
            left = nbytes
            while left > 0:
                fh.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        Path(name).unlink(missing_ok=True)
        raise BenchUnavailable(f"--dir {directory}: write failed ({exc.strerror or exc})") from None
    return Path(name)


def _evict(path: Path) -> bool:
    """Drop the file's pages from the page cache (Linux); False where that is not possible."""
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def run_storage(ctx: BenchContext) -> None:
    directory = ctx.directory
    _check_dir(directory)
    nbytes = (64 if ctx.quick else 1024) * 2**20
    path = _write_file(directory, nbytes)
    none = ctx.predictor.none("GB/s", "local storage is not in the catalog; compare with the plan's read bandwidth")
    try:
        samples = []
        for _ in range(ctx.repeats):
            evicted = _evict(path)
            t0 = time.perf_counter()
            with open(path, "rb", buffering=0) as fh:
                while fh.read(_BLOCK):
                    pass
            samples.append(time.perf_counter() - t0)
        med = sorted(samples)[len(samples) // 2]
        params: dict[str, Any] = {"dir": str(directory), "file_bytes": nbytes, "block_bytes": _BLOCK,
                                  "page_cache_evicted": evicted}
        ctx.add(benchmark="storage", name="storage.seq_read", metric="read_bandwidth", value=gbyte_s(nbytes, med),
                unit="GB/s", samples=samples, predicted=none, params=params)
        reads = 2000 if ctx.quick else 20000
        rng = random.Random(0)
        pages = nbytes // _PAGE
        samples = []
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(ctx.repeats):
                evicted = _evict(path)
                offsets = [rng.randrange(pages) * _PAGE for _ in range(reads)]
                t0 = time.perf_counter()
                for off in offsets:
                    os.pread(fd, _PAGE, off)
                samples.append(time.perf_counter() - t0)
        finally:
            os.close(fd)
        med = sorted(samples)[len(samples) // 2]
        iops = reads / med
        rparams: dict[str, Any] = {**params, "block_bytes": _PAGE, "reads": reads, "queue_depth": 1}
        ctx.add(benchmark="storage", name="storage.random_read.iops", metric="iops", value=iops, unit="IOPS",
                samples=samples, predicted=ctx.predictor.none("IOPS", none.reason), params=rparams)
        ctx.add(benchmark="storage", name="storage.random_read.bandwidth", metric="read_bandwidth",
                value=iops * _PAGE / 1e9, unit="GB/s", samples=samples, predicted=none, params=rparams)
    finally:
        path.unlink(missing_ok=True)


class _TokenFile:
    """Map-style dataset of fixed-length uint32 token sequences in a file (picklable for workers)."""

    def __init__(self, path: str, seq_len: int) -> None:
        self.path = path
        self.seq_len = seq_len
        self.n = os.path.getsize(path) // (4 * seq_len)
        self._mm: Any = None

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        import numpy as np
        import torch

        if self._mm is None:
            self._mm = np.memmap(self.path, dtype=np.uint32, mode="r")
        s = self.seq_len
        return torch.from_numpy(np.array(self._mm[i * s:(i + 1) * s], dtype=np.int64))


def run_dataloader(ctx: BenchContext) -> None:
    """Tokens/s a DataLoader with `dataloader_workers` delivers from a token file in the directory."""
    _check_dir(ctx.directory)
    t = ctx.backend.torch
    seq_len = 1024 if ctx.quick else 4096
    batch = 8
    sequences = 512 if ctx.quick else 8192
    path = _write_file(ctx.directory, sequences * seq_len * 4)
    try:
        ds = _TokenFile(str(path), seq_len)
        workers = ctx.dataloader_workers
        loader = t.utils.data.DataLoader(ds, batch_size=batch, shuffle=True, num_workers=workers,
                                         pin_memory=ctx.backend.kind == "cuda", persistent_workers=False)
        samples = []
        tokens = 0
        for _ in range(max(1, ctx.repeats // 2)):
            _evict(path)
            t0 = time.perf_counter()
            tokens = 0
            for xb in loader:
                tokens += int(xb.numel())
            samples.append(time.perf_counter() - t0)
        med = sorted(samples)[len(samples) // 2]
        rate = tokens / med
        target = ctx.dataloader_token_rate
        ctx.add(benchmark="dataloader", name=f"dataloader.{workers}workers", metric="tokens_per_s", value=rate,
                unit="tokens/s", samples=samples,
                predicted=ctx.predictor.none("tokens/s", "a data-loader rate depends on the host and the files; "
                                                         "compare with target_tokens_per_s"),
                params={"dir": str(ctx.directory), "workers": workers, "seq_len": seq_len, "batch": batch,
                        "tokens_per_epoch": tokens, "target_tokens_per_s": target,
                        "meets_target": rate >= target, "includes_worker_startup": True})
    finally:
        path.unlink(missing_ok=True)
