"""The money side: ROI of speculative decoding (the field report's formula) and the VRAM planner.

Pure Python (no torch): ``plan`` reads config.json files only, ``roi`` works from a measured speedup or
given numbers.
"""

from specmeter.economics.gpus import Catalogue, Gpu, load_catalogue
from specmeter.economics.modelcfg import ArchFacts, arch_from_config, arch_from_dict
from specmeter.economics.plan import (
    DEFAULT_UTILIZATION,
    KV_FORMATS,
    WEIGHT_FORMATS,
    Fit,
    Footprint,
    PlanRow,
    Traffic,
    footprint,
    plan,
    traffic,
    weight_bytes,
)
from specmeter.economics.roi import HOURS_PER_MONTH, RoiInputs, RoiResult, compute_roi, price_ratio_for_saving

__all__ = [
    "DEFAULT_UTILIZATION",
    "HOURS_PER_MONTH",
    "KV_FORMATS",
    "WEIGHT_FORMATS",
    "ArchFacts",
    "Catalogue",
    "Fit",
    "Footprint",
    "Gpu",
    "PlanRow",
    "RoiInputs",
    "RoiResult",
    "Traffic",
    "arch_from_config",
    "arch_from_dict",
    "compute_roi",
    "footprint",
    "load_catalogue",
    "plan",
    "price_ratio_for_saving",
    "traffic",
    "weight_bytes",
]
