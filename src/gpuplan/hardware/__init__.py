"""The hardware catalog: accelerators, servers, networks, cloud instances and storage.

Built-in data lives in `data/*.yaml`; users add or replace records by id in their config
folder (`~/.config/gpuplan/catalog`) or with `--catalog DIR`. `load_catalog()` returns the
merged, fully checked `Catalog` or raises `CatalogError` listing every problem.
"""

from gpuplan.hardware.catalog import Catalog, Origin
from gpuplan.hardware.issues import CatalogError, CatalogIssue
from gpuplan.hardware.overrides import builtin_data_dir, check_dir, load_catalog, user_catalog_dir
from gpuplan.hardware.schema_base import CurrencyRates, Price, PricingPolicy, Sourced, convert
from gpuplan.hardware.schema_devices import DENSE_FIELDS, Accelerator, FrameworkSupport, Nic, Server
from gpuplan.hardware.schema_offers import CalibrationTerm, Instance, Network, Storage

__all__ = [
    "DENSE_FIELDS",
    "Accelerator",
    "CalibrationTerm",
    "Catalog",
    "CatalogError",
    "CatalogIssue",
    "CurrencyRates",
    "FrameworkSupport",
    "Instance",
    "Network",
    "Nic",
    "Origin",
    "Price",
    "PricingPolicy",
    "Server",
    "Sourced",
    "Storage",
    "builtin_data_dir",
    "check_dir",
    "convert",
    "load_catalog",
    "user_catalog_dir",
]
