"""The training and serving forms' own quotes: form fields into the request's `user_catalog`, and the plan page's
"your quotes" table (each record the plan was planned with, quoted by the user, and whether a ranked plan uses it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi.concurrency import run_in_threadpool

__all__ = ["quotes_view", "with_quotes"]


async def with_quotes(form: dict[str, Any]) -> dict[str, Any]:
    """`form` with `user_catalog` made from its quote fields (left as it is when they are empty or a
    `user_catalog` field, e.g. the recompute button's, comes with it); InputError naming the form field."""
    from gpuplan.hardware import load_catalog
    from gpuplan.service.user_catalog import quotes_from_form

    if form.get("user_catalog") or not (str(form.get("quote_accelerator") or "").strip()
                                        or str(form.get("custom_id") or "").strip()):
        return form
    cat = await run_in_threadpool(load_catalog)
    uc = await run_in_threadpool(quotes_from_form, form, cat)
    return form | {"user_catalog": uc} if uc is not None else form


def _used(result: Mapping[str, Any]) -> set[str]:
    out = set()
    for p in result.get("plans") or []:
        if isinstance(p, Mapping):
            offer = p.get("offer") or p.get("instance") or (p.get("hardware_option") or {}).get("offer")
            if isinstance(offer, str):
                out.add(offer)
    return out


def quotes_view(request: Mapping[str, Any], result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per record of the request's own catalog: instances with their price per GPU-hour, then custom
    hardware; `used` when a ranked plan runs on it."""
    uc = request.get("user_catalog")
    if not isinstance(uc, Mapping):
        return []
    used = _used(result)
    rows: list[dict[str, Any]] = []
    for inst in uc.get("instances") or []:
        for price in inst.get("prices") or []:
            if price.get("amount") is None:
                continue
            per_gpu = float(price["amount"]) / float(inst.get("accelerator_count") or 1)
            rows.append({"id": inst["id"], "kind": f"{price['kind']} ({inst.get('server')})",
                         "value": f"{per_gpu:.4g} {price['currency']} / GPU-h", "as_of": price.get("as_of", ""),
                         "source": price.get("source", ""), "used": inst["id"] in used})
    for acc in uc.get("accelerators") or []:
        rows.append({"id": acc["id"], "kind": "accelerator",
                     "value": f"{acc.get('hbm_gib')} GiB, {acc.get('bf16_dense_tflops')} TFLOPS bf16",
                     "as_of": acc.get("as_of", ""), "source": acc.get("source", ""), "used": False})
    for srv in uc.get("servers") or []:
        rows.append({"id": srv["id"], "kind": "server",
                     "value": f"{srv.get('accelerators_per_node')} x {srv.get('accelerator')}",
                     "as_of": srv.get("as_of", ""), "source": srv.get("source", ""), "used": False})
    return rows
