"""The message catalog is complete in both languages, and every key used in code exists."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from gpuplan.advise import FINDING_IDS
from gpuplan.advise.findings import advise_data
from gpuplan.advise.report_infer import INFER_MEMORY_PARTS
from gpuplan.advise.report_train import MEMORY_PARTS
from gpuplan.cli import bench as bench_cli
from gpuplan.cli import catalog as catalog_cli
from gpuplan.cli import infer as infer_cli
from gpuplan.cli import infer_plan as infer_plan_cli
from gpuplan.cli import model as model_cli
from gpuplan.cli import usage as usage_cli
from gpuplan.cli import validate as validate_cli
from gpuplan.errors import InputError
from gpuplan.estimate.uncertainty import NOVELTY
from gpuplan.i18n import LANGS, both, default_lang, messages, resolve_lang, tr
from gpuplan.render.report_text import PLAN_COLS
from gpuplan.search.train_eval import BREAKDOWN_KEYS
from gpuplan.simulate.fleet_sim import ROUTERS

SRC = Path(__file__).resolve().parents[2] / "src" / "gpuplan"
KEY_CALL = re.compile(r"""\b(?:tr|both|_t|help_text)\(\s*["']([a-z0-9_.]+)["']""")
# a key built at run time: tr(f"prefix.{name}", ...) (the families below list every name)
PREFIX_CALL = re.compile(r"""\b(?:tr|both|_t)\(\s*f["']([a-z0-9_.]+)\{""")


def _fields(template: str) -> set[str]:
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(template) if name}


def test_every_message_has_every_language_with_the_same_placeholders() -> None:
    for key, texts in messages().items():
        assert set(texts) == set(LANGS), key
        assert all(texts[lang].strip() for lang in LANGS), key
        en = _fields(texts["en"])
        for lang in LANGS:
            fields = _fields(texts[lang])
            # a field may be language-specific only when it is named *_<lang> (data text in that language)
            assert {f for f in fields ^ en if not f.endswith(tuple(f"_{x}" for x in LANGS))} == set(), key


def test_every_key_used_in_code_exists() -> None:
    used = set()
    for path in SRC.rglob("*.py"):
        used |= set(KEY_CALL.findall(path.read_text(encoding="utf-8")))
    used = {k for k in used if not k.endswith(".")}  # prefixes completed at run time: the families below
    used |= {f"finding.{fid}.{part}" for fid in FINDING_IDS for part in ("msg", "fix")}
    used |= {f"report.step.{k}" for k in BREAKDOWN_KEYS}
    used |= {f"report.part.{k.removesuffix('_bytes')}" for k in MEMORY_PARTS}
    used |= {f"report.part.{k}" for k in INFER_MEMORY_PARTS}
    used |= {f"report.growth.{k}" for k in ("holds", "replan", "none")}
    used |= {f"report.tenancy.{k}" for k in ("dedicated", "shared")}
    # the CLI's tables: column headers and row labels built from the modules' own lists
    used |= {f"cli.catalog.col.{c}" for cols in catalog_cli._HEADERS.values() for c in cols}
    used |= {f"cli.catalog.col.{c}" for c in ("conf", "field", "value", "source", "as_of")}
    used |= {f"cli.catalog.{form}.{k}" for form in ("kind", "one") for k in catalog_cli.KINDS}
    used |= {f"cli.pinfer.col.{c}" for c in infer_plan_cli.COLS}
    used |= {f"cli.einfer.{c}" for c in infer_cli.FIGURES}
    used |= {f"cli.model.col.{c}" for c in model_cli.LIST_COLS}
    used |= {f"cli.validate.col.{c}" for c in validate_cli.COLS}
    used |= {f"cli.bench.col.{c}" for c in (*bench_cli.SUMMARY_COLS, *bench_cli.VS_COLS)}
    used |= {f"cli.calibrate.col.{c}" for c in bench_cli.CALIBRATE_COLS}
    # typer/click usage errors: keys chosen from the error's kind (cli/usage.py tables)
    used |= {key for _, key in (*usage_cli._DETAILS, *usage_cli._OTHER)} | set(usage_cli._PYDANTIC.values())
    used |= {f"cli.usage.missing_{k}" for k in ("option", "argument", "parameter")}
    used |= {f"report.sev.{k}" for k in ("info", "warn", "critical")}
    used |= {f"report.prov.{k}" for k in ("measured", "estimated", "datasheet", "data")}
    used |= {f"report.risk.{v['risk']}" for v in advise_data("ecosystem")["stacks"].values()}
    used |= {f"report.tco.{k}" for k in ("on_demand", "monthly", "yearly", "spot", "buy")}
    used |= {f"report.col.{k}" for k in PLAN_COLS}
    used |= {f"report.rec.measure.{k}" for k in ("cost", "device_hours")}
    used |= {f"report.rec.rule.{k}" for k in ("smallest_within_target", "cheapest_within_target",
                                              "unpriced_within_target", "fastest_near_cheapest", "fastest", "none")}
    used |= {f"report.section.{k}" for k in ("job", "recommendation", "runners_up", "pareto", "memory", "step",
                                             "scaling", "findings", "tco", "assumptions", "calibration", "thresholds",
                                             "sources", "options")}
    # how sure a plan is (render/trust_text.py) and price labels (search/pricing.py)
    used |= {f"trust.level.{k}" for k in ("low", "medium", "high", "none")}
    used |= {f"trust.eff.{k}" for k in ("measured", "validated", "default")}
    used |= {f"trust.novelty.{k}" for k in NOVELTY}  # what is new about a figure (estimate/uncertainty.py)
    used |= {f"trust.basis.{k}" for k in ("list_price", "market_quote")}
    used |= {f"trust.market.{k}" for k in ("cn", "global")}
    used |= {f"trust.per.{k}" for k in ("monthly", "on_demand_hourly")}
    used |= {f"price.confidence.{k}" for k in ("high", "medium", "low", "none")}
    used |= {f"web.validation.kind.{k}" for k in ("train", "serve", "memory")}  # the kinds of accuracy.json
    used |= {f"trust.group.{k}" for k in ("throughput", "campaign", "memory", "latency")}
    used |= {f"cli.einfer.part.{k}" for k in ("compute", "memory", "communication", "overhead")}  # decode_step
    used |= {f"cli.pinfer.miss.{k}" for k in ("tpot", "ttft", "out_of_memory", "load")}  # parts_without_plan
    from gpuplan.service.checks import RULE_TYPES

    used |= {f"pydantic.{k}" for k in RULE_TYPES}  # validation rules in the page's language (service/checks.py)
    used |= {f"web.valid.hint.{k}" for k in ("missing", "extra_forbidden", "type", "choice", "range", "length",
                                             "other")}  # web/app.py _hint_kind
    used |= {f"cli.pinfer.router.{k}" for k in ROUTERS}  # the router a plan was sized under (simulate.fleet_sim)
    from gpuplan.search.infer_traffic import DAYS

    used |= {f"traffic.day.{k}" for k in DAYS}  # plan infer --traffic (render/traffic_text.py)
    used |= {f"traffic.kind.{k}" for k in ("on_demand", "spot", "monthly", "yearly", "multi_year", "owned")}
    from gpuplan.search.infer_offload import PREFIX_TIERS

    used |= {f"prefix.tier.{k}" for k in PREFIX_TIERS}  # where a prefix set is kept (render/report_text.py)
    from gpuplan.estimate.memory_infer import INFER_NOTES
    from gpuplan.estimate.memory_train import TRAIN_NOTES

    used |= {f"memory.note.{k}" for k in (*TRAIN_NOTES, *INFER_NOTES)}  # a memory estimate's notes, both languages
    from gpuplan.estimate.infer_step import STEP_NOTES

    used |= {f"infer.note.{k}" for k in STEP_NOTES}  # a serving step model's notes, both languages
    from gpuplan.advise.tco_own import FORMULA_LINES

    used |= {f"tco.formula.{k}" for k in FORMULA_LINES}  # the owned cost lines' formulas (advise/tco_own.py)
    from gpuplan.advise.tco_rents import WEAKNESSES

    used |= {f"cli.tco.weakness.{k}" for k in WEAKNESSES}  # what a rent verdict rests on (cli/tco.py)
    assert len(used) > 60
    missing = sorted(k for k in used if k not in messages())
    assert missing == []
    # every run-time prefix in code is one of the families above
    prefixes = set()
    for path in SRC.rglob("*.py"):
        prefixes |= set(PREFIX_CALL.findall(path.read_text(encoding="utf-8")))
    assert "cli.catalog.col." in prefixes and "cli.einfer." in prefixes
    orphan = sorted(p for p in prefixes if not any(k.startswith(p) for k in used))
    assert orphan == []


def test_chinese_keeps_technical_terms() -> None:
    assert "RDMA" in tr("finding.net.rdma_required_unquantified.msg", "zh", nodes=2, net="eth-25-tcp")
    assert "PFC" in tr("finding.net.roce_lossless.fix", "zh")


def test_language_from_locale() -> None:
    assert default_lang({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert default_lang({"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert default_lang({}) == "en"
    assert resolve_lang("zh") == "zh"
    with pytest.raises(InputError):
        resolve_lang("fr")
    assert set(both("finding.net.rail.fix")) == set(LANGS)
