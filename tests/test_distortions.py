"""Geirhos distortions: each test measures the property the distortion claims."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tasks.stimuli import distortions as D


@pytest.fixture(scope="module")
def photo():
    import skimage.data

    return D._square(skimage.data.astronaut(), 128)


def test_colour_and_contrast(photo):
    g = D.colour(photo, "greyscale")
    assert np.allclose(g[..., 0], g[..., 1]) and np.allclose(g[..., 0], photo @ D.LUMA)
    for c in (0.5, 0.1, 0.01):
        out = D.contrast(photo, c)[..., 0]
        grey = photo @ D.LUMA
        # contrast around 0.5: the range shrinks by c and 0.5 stays fixed
        np.testing.assert_allclose(out.max() - out.min(), c * (grey.max() - grey.min()), rtol=1e-9)
        np.testing.assert_allclose(out, 0.5 + c * (grey - 0.5), atol=1e-12)
    assert D.CONDITIONS["contrast"]["c05"] == 0.05 and D.CONDITIONS["contrast"]["c100"] == 1.0


def test_uniform_noise_bounds_and_clipping(photo):
    rng = np.random.default_rng(0)
    base = D.contrast(photo, 0.3)[..., 0]  # in [0.35, 0.65]
    for w in (0.1, 0.35, 0.6, 0.9):
        out = D.uniform_noise(photo, w, rng)[..., 0]
        d = out - base
        assert d.min() >= -w - 1e-12 and d.max() <= w + 1e-12
        clipped = ((out == 0) | (out == 1)).mean()
        if w <= 0.35:
            assert clipped == 0  # no clipping up to w = 0.35 ...
        else:
            assert clipped > 0.01  # ... and some above
        assert abs(d[(out > 0) & (out < 1)].mean()) < 0.02


def test_salt_and_pepper_fraction(photo):
    out = D.salt_and_pepper(photo, 0.5, np.random.default_rng(1))[..., 0]
    assert abs((out == 0).mean() - 0.25) < 0.02 and abs((out == 1).mean() - 0.25) < 0.02


def _spectrum(x):
    """|FFT| with a Hann window, so the image borders do not add broadband energy."""
    win = np.outer(np.hanning(x.shape[0]), np.hanning(x.shape[1]))
    return np.abs(np.fft.fft2((x - x.mean()) * win))


def test_low_pass_removes_energy_above_cutoff(photo):
    g = photo @ D.LUMA
    out = D.low_pass(photo, 5.0)[..., 0]
    f_in, f_out = _spectrum(g), _spectrum(out)
    fy, fx = np.meshgrid(np.fft.fftfreq(128), np.fft.fftfreq(128), indexing="ij")
    high = np.hypot(fx, fy) > 3 / (2 * np.pi * 5.0)  # 3 standard deviations of the filter's spectrum
    assert f_out[high].sum() < 0.01 * f_in[high].sum()
    np.testing.assert_allclose(D.low_pass(photo, 0)[..., 0], g)


def test_high_pass_mean_and_response(photo):
    for s in (3.0, 1.0, 0.45):
        out = D.high_pass(photo, s)[..., 0]
        assert abs(out.mean() - 0.4423) < 0.01
    g = photo @ D.LUMA
    out = D.high_pass(photo, 1.0)[..., 0]
    f_in, f_out = _spectrum(g), _spectrum(out)
    fy, fx = np.meshgrid(np.fft.fftfreq(128), np.fft.fftfreq(128), indexing="ij")
    low = (np.hypot(fx, fy) < 0.02) & (np.hypot(fx, fy) > 0)
    assert f_out[low].sum() < 0.1 * f_in[low].sum()
    np.testing.assert_allclose(D.high_pass(photo, float("inf"))[..., 0], g)


def test_phase_noise_clean_keeps_amplitude_faithful_lowers_it(photo):
    g = photo @ D.LUMA
    amp = np.abs(np.fft.fft2(g))
    nz = np.ones_like(amp, bool)
    nz[0, 0] = False
    for width in (30, 90, 180):
        clean = D.phase_noise(photo, width, np.random.default_rng(2), "clean", clip=False)[..., 0]
        np.testing.assert_allclose(np.abs(np.fft.fft2(clean)), amp, rtol=1e-6, atol=1e-6)  # amplitude kept
        assert np.abs(np.fft.fft2(clean) - np.fft.fft2(g))[nz].mean() > 0.1 * amp[nz].mean()  # phases moved
    # faithful: mean amplitude (non-DC) x 8/pi^2 at 90 deg and x 2/pi at 180 deg, as on the original stimuli
    for width, factor in ((90, 8 / np.pi**2), (180, 2 / np.pi)):
        ratios = []
        for k in range(3):
            out = D.phase_noise(photo, width, np.random.default_rng(k), "faithful", clip=False)[..., 0]
            ratios.append(np.abs(np.fft.fft2(out))[nz].mean() / amp[nz].mean())
        assert abs(np.mean(ratios) - factor) < 0.03, (width, np.mean(ratios), factor)
    assert D.phase_noise(photo, 90, np.random.default_rng(0), "clean")[..., 0].min() >= 0


def test_power_equalisation_sets_the_spectrum():
    import skimage.data

    imgs = [D._square(getattr(skimage.data, n)(), 64) for n in ("astronaut", "chelsea", "coffee")]
    target = D.mean_amplitude_spectrum(imgs)
    out = D.power_equalisation(imgs[0], target)[..., 0]
    got = np.abs(np.fft.fft2(out))
    # away from clipping the amplitudes equal the target (clipping perturbs them a little)
    assert np.corrcoef(np.log1p(got.ravel()), np.log1p(target.ravel()))[0, 1] > 0.95
    np.testing.assert_allclose(D.power_equalisation(imgs[0], None)[..., 0], imgs[0] @ D.LUMA)


def test_opponent_colour_keeps_luminance_and_negates_chromatic_axes(photo):
    small = 0.25 + 0.5 * photo  # away from the gamut edges, where clipping would interfere
    out = D.opponent_colour(small)
    a, b = D.rgb_to_dkl(small), D.rgb_to_dkl(out)
    # pixels whose negated colour stays in gamut (no clipping): luminance kept, chromatic axes negated
    dkl = a.copy()
    dkl[..., 1:] *= -1
    white = D.M_RGB2LMS @ np.full(3, 0.5)
    lin = (dkl @ np.linalg.inv(D.N_LMS2DKL).T + white) @ np.linalg.inv(D.M_RGB2LMS).T
    inside = np.all((lin > 0) & (lin < 1), axis=-1)
    assert inside.mean() > 0.5
    np.testing.assert_allclose(b[inside][:, 0], a[inside][:, 0], atol=1e-6)
    np.testing.assert_allclose(b[inside][:, 1:], -a[inside][:, 1:], atol=1e-6)
    np.testing.assert_array_equal(D.opponent_colour(photo, False), photo)


def test_rotation_is_exact(photo):
    g = photo @ D.LUMA
    np.testing.assert_array_equal(D.rotation(photo, 90)[..., 0], np.rot90(g))
    np.testing.assert_array_equal(D.rotation(photo, 90)[0, -1, 0], g[-1, -1])  # counter-clockwise
    np.testing.assert_array_equal(D.rotation(photo, 180)[..., 0], g[::-1, ::-1])
    with pytest.raises(ValueError, match="multiples of 90"):
        D.rotation(photo, 45)


def test_distortion_dataset(tmp_path):
    from tasks.stimuli import write_dataset

    out = write_dataset("image_distortions", tmp_path / "d", {"size": 64, "distortions": ["contrast", "rotation",
                        "power_equalisation", "phase_noise"]}, progress=False)
    import pandas as pd

    df = pd.read_parquet(out / "annotations.parquet")
    assert len(df) == 8 * (8 + 4 + 2 + 7) and "contrast_c05" in set(df.condition)
    assert df.groupby("set_id").size().eq(21).all()


def test_eidolon_reach_zero_returns_blurred_image_and_displacement_grows():
    from tasks.stimuli.eidolon import blur, eidolon, fat_plane, noise_field, noise_plane, scales

    import skimage.data

    g = D._square(skimage.data.camera(), 64)[..., 0] * 255
    for mode in ("faithful", "clean"):
        zero = eidolon(g, 0.0, 1.0, 10.0, np.random.default_rng(0), mode)
        plane, (t, l) = fat_plane(g)
        s0 = blur(plane, scales(64)[0], mode)[t:t + 64, l:l + 64]
        np.testing.assert_allclose(zero, np.clip(s0, 0, 255), atol=1e-6)  # Σ DOG layers = S_0
        assert np.abs(zero - g).mean() < 12  # σ0 = 0.71 px: a light blur
        diffs = [np.abs(eidolon(g, r, c, 10.0, np.random.default_rng(1), mode) - zero).mean()
                 for c in (1.0, 0.0) for r in (1, 4, 16)]
        assert diffs[0] < diffs[1] < diffs[2] and diffs[3] < diffs[4] < diffs[5], (mode, diffs)
    # the original's normalisation quirk leaves the field unnormalised: std ≈ 0.75 at grain 10 on 512²
    f = noise_field(noise_plane((512, 512), np.random.default_rng(2)), 10.0, "faithful")
    assert 0.6 < f.std() < 0.9
    assert abs(noise_field(noise_plane((512, 512), np.random.default_rng(2)), 10.0, "clean").std() - 1) < 1e-9


def test_eidolon_faithful_flattened_convolution_is_close_to_2d():
    from tasks.stimuli.eidolon import blur

    # on a 512² noise plane at the grain scale (σ = 10) the flattened 1-D convolution is ~6% off the true
    # 2-D one, as measured on the original: half of each kernel row is taken from the row above
    x = np.random.default_rng(3).normal(size=(512, 512))
    a, b = blur(x, 10.0, "clean"), blur(x, 10.0, "faithful")
    rel = np.abs(a - b).max() / np.abs(a).max()
    assert 0.02 < rel < 0.08


def test_eidolon_conditions_codes():
    assert D.CONDITIONS["eidolon_II"]["8-3-10"] == (8, 0.3)
    assert len(D.CONDITIONS["eidolon_III"]) == 8


# ---------------------------------------------------------------------- issue 12: faithful = the original
from shared_data import shared_data  # noqa: E402

SHARED = [shared_data()]
MVH = next((p / "human-trials" / "model-vs-human" for p in SHARED if (p / "human-trials").is_dir()), None)


def _original_phase_scrambling(grey, width, uniforms):
    """The original model-vs-human algorithm, written plainly from its description: scipy.fftpack FFT,
    shifted to the centre; shifts (u − 0.5)·2·width/180·π for (H−1)(W−1)//2 uniforms; the block
    [1:, 1:] flattened, += shifts on its first half, −= shifts (same order) after its middle element."""
    from scipy import fftpack as fp

    shifts = (uniforms - 0.5) * 2 * width / 180 * np.pi
    f = fp.fftshift(fp.fft2(grey))
    amp, phase = np.abs(f), np.angle(f)
    flat = phase[1:, 1:].flatten()
    n = flat.shape[0]
    flat[: n // 2] += shifts
    flat[n // 2 + 1:] -= shifts
    phase[1:, 1:] = flat.reshape(phase[1:, 1:].shape)
    out = fp.ifft2(fp.ifftshift(amp * np.exp(1j * phase))).real
    out[out > 1] = 1
    out[out < 0] = 0
    return out


@pytest.fixture(scope="module")
def photos224():
    import skimage.data

    return [D._square(getattr(skimage.data, n)(), 224) for n in D.SKIMAGE_PHOTOS]


def test_phase_noise_faithful_reproduces_the_original_given_the_same_random_numbers(photos224):
    for k, img in enumerate(photos224[:4]):
        for width in (30, 90, 180):
            ours = D.phase_noise(img, width, np.random.default_rng(k), "faithful")[..., 0]
            u = np.random.default_rng(k).random(223 * 223 // 2)  # the same uniforms
            ref = _original_phase_scrambling(img @ D.LUMA, width, u)
            np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="even image sides"):
        D.phase_noise(photos224[0][:223, :223], 90, np.random.default_rng(0), "faithful")


def test_phase_noise_faithful_keeps_mean_luminance_and_rarely_clips(photos224):
    """The zero frequency is never shifted: the clipped stimuli keep their brightness (the bug: mean
    brightness x0.65 +- 0.28 at 90 deg and black images at 180, 53% clipped pixels)."""
    for width in (90, 180):
        ratios, clipped = [], []
        for k, img in enumerate(photos224):
            g = img @ D.LUMA
            raw = D.phase_noise(img, width, np.random.default_rng(k), "faithful", clip=False)[..., 0]
            assert raw.mean() == pytest.approx(g.mean(), abs=1e-12)  # DC untouched, exactly
            out = D.phase_noise(img, width, np.random.default_rng(k), "faithful")[..., 0]
            ratios.append(out.mean() / g.mean())
            clipped.append(((out <= 0) | (out >= 1)).mean())
        assert np.mean(ratios) == pytest.approx(1.0, abs=0.03) and min(ratios) > 0.9, (width, ratios)
        assert max(clipped) < 0.06 and np.mean(clipped) < 0.03, (width, clipped)


def test_eidolon_coherent_field_has_a_fresh_plane_per_scale():
    """Fresh, independent noise per scale: the level-k field's variance is the sum of its scales'
    variances; with one shared plane (the bug) the finest level's std was ~2.6x too large (1.06 vs 0.41)."""
    from tasks.stimuli.eidolon import displacement_fields, noise_field, noise_plane, scales

    sig = scales(256)
    for seed in (0, 1):
        fx, fy = displacement_fields((512, 512), sig, 1.0, 10.0, np.random.default_rng(seed), "faithful")
        # each scale's own contribution, measured as the difference of consecutive levels
        parts = [fx[k] - fx[k + 1] for k in range(len(sig) - 1)] + [fx[-1]]
        for k in range(len(sig)):
            predicted = np.sqrt(sum(p.var() for p in parts[k:]))
            assert fx[k].std() == pytest.approx(predicted, rel=0.1), (seed, k)
        assert 0.3 < fx[0].std() < 0.5 and 0.3 < fy[0].std() < 0.5
        assert abs(np.corrcoef(parts[0].ravel(), parts[1].ravel())[0, 1]) < 0.1
    # the toolbox's draw order, replayed plainly: row coherent xn, column coherent xn, then per level the
    # row and the column incoherent plane; partially coherent = (1 - c) incoherent + c coherent
    c, n = 0.3, len(sig)
    rng = np.random.default_rng(5)
    coh = []
    for _axis in range(2):
        planes = [noise_field(noise_plane((512, 512), rng), s, "faithful") * (s / 64) for s in sig]
        coh.append([sum(planes[k:]) for k in range(n)])
    inc = [[], []]
    for _k in range(n):
        for axis in range(2):
            inc[axis].append(noise_field(noise_plane((512, 512), rng), 10.0, "faithful"))
    fx, fy = displacement_fields((512, 512), sig, c, 10.0, np.random.default_rng(5), "faithful")
    for k in range(n):
        np.testing.assert_allclose(fx[k], (1 - c) * inc[0][k] + c * coh[0][k], atol=1e-9)
        np.testing.assert_allclose(fy[k], (1 - c) * inc[1][k] + c * coh[1][k], atol=1e-9)


def _lut_reference():
    """The measured table from the shared reference note when present (the original's numbers), else the
    packaged copy; and the original's re-encoding: argmin |lut - v| per value, / 255."""
    ref = [p.parent / "reference" / "opponent-colour-gamma-lut.csv" for p in SHARED]
    path = next((p for p in ref if p.is_file()), None)
    if path is None:
        return D.display_lut()
    rows = [ln.split(",") for ln in path.read_text().splitlines() if ln and not ln.startswith(("#", "grey_level"))]
    return np.array([float(v) for _, v in rows])


def _original_false_colour(img8, lut):
    x = lut[img8.astype(int)]
    white = D.M_RGB2LMS @ np.full(3, 0.5)
    dkl = np.einsum("ij,klj->kli", D.N_LMS2DKL, np.einsum("ij,klj->kli", D.M_RGB2LMS, x) - white)
    dkl[..., 1] *= -1
    dkl[..., 2] *= -1
    rgb = np.einsum("ij,klj->kli", np.linalg.inv(D.M_RGB2LMS), np.einsum("ij,klj->kli", np.linalg.inv(D.N_LMS2DKL), dkl) + white)
    rgb = np.clip(rgb, 0, 1)
    return np.abs(lut[None, :] - rgb.reshape(-1, 1)).argmin(axis=1).reshape(rgb.shape)


def test_opponent_colour_faithful_uses_the_measured_display_table(photo):
    lut = _lut_reference()
    np.testing.assert_array_equal(D.display_lut(), lut)
    assert np.all(np.diff(lut) > 0) and lut[0] == 0 and lut[-1] == 1
    img8 = (photo * 255 + 0.5).astype(np.uint8)
    ours = (D.opponent_colour(img8 / 255.0, True, mode="faithful") * 255 + 0.5).astype(int)
    ref = _original_false_colour(img8, lut)
    assert np.abs(ours - ref).max() <= 1
    assert (ours == ref).mean() > 0.999
    # the binary search is the argmin, ties included
    v = np.concatenate([lut, (lut[1:] + lut[:-1]) / 2, np.random.default_rng(0).random(5000)])
    np.testing.assert_array_equal(D.lut_encode(v, lut) * 255, np.abs(lut[None] - v[:, None]).argmin(1))
    clean = (D.opponent_colour(img8 / 255.0, True, mode="clean") * 255 + 0.5).astype(int)
    assert np.abs(clean - ref).max() > 10  # the power law is not the table


def test_condition_codes_are_the_human_tables_strings():
    expected = {"colour": {"cr", "bw"}, "uniform_noise": {"0.00", "0.03", "0.05", "0.10", "0.20", "0.35", "0.60", "0.90"},
                "high_pass": {"inf", "3", "1.5", "1", "0.7", "0.55", "0.45", "0.4"},
                "phase_noise": {"0", "30", "60", "90", "120", "150", "180"}, "opponent_colour": {"true", "false"},
                "low_pass": {"0", "1", "3", "5", "7", "10", "15", "40"}, "eidolon_I": {f"{r}-10-10" for r in (1, 2, 4, 8, 16, 32, 64, 128)}}
    for dist, codes in expected.items():
        assert set(D.CONDITIONS[dist]) == codes, dist
    assert D.normalise_code("uniform_noise", 0.0) == "0.00" and D.normalise_code("opponent_colour", True) == "true"
    assert D.normalise_code("high_pass", "3.0") == "3" and D.normalise_code("phase_noise", 30.0) == "30"
    assert D.normalise_code("power_equalisation", 0.0) == "0" and D.normalise_code("contrast", "c05") == "c05"
    with pytest.raises(ValueError, match="not one of"):
        D.normalise_code("rotation", "45")
    if MVH is None:
        pytest.skip("../shared/data/human-trials is not present: checked against the literal codes above only")
    import csv

    for dist, exp in D.EXPERIMENT.items():
        if not exp:
            continue
        codes = set()
        for f in (MVH / exp).glob("*.csv"):
            with open(f, newline="") as fh:
                codes |= {r["condition"] for r in csv.DictReader(fh)}
        assert codes == set(D.CONDITIONS[dist]), (dist, sorted(codes))


def test_power_equalisation_spectrum_file_and_source_file_column(tmp_path):
    from PIL import Image

    from tasks.stimuli import ConfigError, write_dataset

    src = tmp_path / "src" / "things"
    src.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(2):
        Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(src / f"im{i}.png")
    target = np.fft.fftshift(np.abs(np.fft.fft2(rng.random((32, 32)))))  # centred layout, as the original's
    np.save(tmp_path / "spec.npy", target)
    out = write_dataset("image_distortions", tmp_path / "d", {"source": str(tmp_path / "src"), "size": 32,
                        "distortions": ["power_equalisation"], "spectrum": str(tmp_path / "spec.npy")}, progress=False)
    df = pd.read_parquet(out / "annotations.parquet")
    assert sorted(set(df.source_file)) == ["things/im0.png", "things/im1.png"]
    assert set(df.experiment) == {"power-equalisation"}
    row = df[(df.code == "pow") & (df.source_file == "things/im0.png")].iloc[0]
    got = np.asarray(Image.open(out / row.file_name))[..., 0]
    img = D._load(("file", str(src / "im0.png")), 32)
    want = D.power_equalisation(img, np.fft.ifftshift(target))[..., 0]
    assert np.abs(got.astype(int) - (want * 255 + 0.5).astype(int)).max() == 0
    np.save(tmp_path / "bad.npy", np.ones((8, 8)))
    with pytest.raises(ConfigError, match=r"spectrum=.*bad.npy.*\[32, 32\]"):
        write_dataset("image_distortions", tmp_path / "e", {"size": 32, "distortions": ["power_equalisation"],
                      "spectrum": str(tmp_path / "bad.npy")}, progress=False)
