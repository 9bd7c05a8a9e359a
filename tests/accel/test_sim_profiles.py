"""Device profiles: every figure cited, systems derived by count, Trainium4 projected, overrides and user files."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore.accel.errors import ProfileError
from agentcore.accel.sim.profiles import load_catalog


@pytest.fixture(scope="module")
def catalog():  # type: ignore[no-untyped-def]
    return load_catalog()


def test_every_figure_cites_a_known_source_or_an_assumption(catalog) -> None:  # type: ignore[no-untyped-def]
    for chip in catalog.chips.values():
        for name, figure in chip.figures().items():
            assert figure.source in catalog.sources or figure.assumption, f"{chip.key}.{name}"
    assert all(source.url for source in catalog.sources.values())


def test_systems_derive_totals_from_per_chip_specs(catalog) -> None:  # type: ignore[no-untyped-def]
    gen2 = catalog.profile("trn3-ultraserver-gen2").totals()
    # AWS trn3-arch table: 144 chips, 1,152 cores, 362 PF MXFP8, 20,736 GiB, 705.6 TB/s
    assert (gen2["chips"], gen2["cores"]) == (144, 1152)
    assert gen2["fp8_pflops"] == pytest.approx(362.448)
    assert gen2["hbm_gib"] == 20736
    assert gen2["hbm_tbps"] == pytest.approx(705.6)
    trn2 = catalog.profile("trn2.48xlarge").totals()
    assert trn2["cores"] == 128 and trn2["hbm_gib"] == 1536  # AWS trn2-arch: 128 cores, 1,536 GiB
    assert catalog.profile("trn2-ultraserver").cores == 512
    assert catalog.profile("trn3-ultraserver-gen1").chips == 64


def test_clusters_scale_to_a_million_chips(catalog) -> None:  # type: ignore[no-untyped-def]
    cluster = catalog.profile("trn3:1000000")
    assert cluster.chips == 1_000_000 and cluster.cores == 8_000_000
    assert catalog.profile("trn3-ultraserver-gen2:4").chips == 576


def test_trainium4_is_projected_from_announced_ratios(catalog) -> None:  # type: ignore[no-untyped-def]
    trn3, trn4 = catalog.chips["trn3"], catalog.chips["trn4"]
    assert trn4.projected and not trn3.projected
    assert trn4.tflops("fp8") == pytest.approx(3 * trn3.tflops("fp8"))
    assert trn4.tflops("fp4") == pytest.approx(6 * trn3.tflops("fp4"))
    assert trn4.hbm_tbps.value == pytest.approx(4 * trn3.hbm_tbps.value)
    assert trn4.hbm_gib.value == pytest.approx(2 * trn3.hbm_gib.value)
    assert trn4.fp8_tflops.source == "trn4-preview"
    assert trn4.bf16_tflops.assumption and "carried over" in trn4.bf16_tflops.assumption


def test_unpublished_figures_are_named_assumptions_that_config_overrides() -> None:
    default = load_catalog()
    assert default.chips["trn3"].usd_per_chip_hour.assumption
    overridden = load_catalog(overrides={"trn3.usd_per_chip_hour": 4.5})
    price = overridden.chips["trn3"].usd_per_chip_hour
    assert price.value == 4.5 and "overridden" in (price.assumption or "")
    assert overridden.profile("trn3-ultraserver-gen2").usd_per_hour == pytest.approx(144 * 4.5)


def test_user_profiles_add_chips_and_systems(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(
        """
[sources.my-lab]
url = "https://example.org/our-measurements"
kind = "our own measurements"

[systems.my-trn2-pod]
chip = "trn2"
chips = { value = 4, assumption = "our reserved pod" }

[chips.trn2]
name = "Trainium2 (our price)"
neuron_cores = { value = 8, source = "my-lab" }
fp32_tflops = { value = 181, source = "my-lab" }
bf16_tflops = { value = 667, source = "my-lab" }
fp8_tflops = { value = 1299, source = "my-lab" }
vector_tflops_per_core = { value = 1.0, source = "my-lab" }
hbm_gib = { value = 96, source = "my-lab" }
hbm_tbps = { value = 2.9, source = "my-lab" }
sram_mib = { value = 224, source = "my-lab" }
link_gbps = { value = 1280, source = "my-lab" }
power_watts = { value = 500, source = "my-lab" }
idle_watts = { value = 150, source = "my-lab" }
usd_per_chip_hour = { value = 1.5, assumption = "negotiated discount" }
"""
    )
    catalog = load_catalog([tmp_path])
    pod = catalog.profile("my-trn2-pod")
    assert pod.cores == 32 and pod.usd_per_hour == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("name", "message"),
    [("trn9", "known profiles: .*trn1.32xlarge"), ("trn3:0", "positive integer"), ("trn3:x", "positive integer")],
)
def test_bad_profile_names_say_what_is_known(catalog, name: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ProfileError, match=message):
        catalog.profile(name)


def test_uncited_figures_and_bad_overrides_are_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[systems.x]\nchip = "trn2"\nchips = { value = 4 }\n')
    with pytest.raises(ProfileError, match="exactly one of `source`"):
        load_catalog([bad])
    with pytest.raises(ProfileError, match="must be positive"):
        load_catalog(overrides={"trn2.neuron_cores": 0})
    with pytest.raises(ProfileError, match=r"CHIP\.FIELD"):
        load_catalog(overrides={"trn3.price": 1.0})
    with pytest.raises(ProfileError, match="fp4"):
        load_catalog().chips["trn2"].tflops("fp4")
