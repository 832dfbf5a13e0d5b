"""The procedural object library (scenes/objects) and its CPU drawing renderer (render/drawing.py):
labels, determinism, the compiled rasteriser against its NumPy twin, framing, stroke width, lines."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import trimesh

from render.drawing import (DrawingError, View, buffers, edge_mask, edge_mask_reference, line_drawing, rasterize, rasterize_reference,
                            project, silhouette)
from scenes.objects import N_INSTANCES, ObjectError, build, categories, category_names

ROOT = Path(__file__).resolve().parents[1]


def test_categories_and_imagenet_indices_match_the_16_class_table():
    data = json.loads((ROOT / "scenes" / "objects" / "imagenet.json").read_text())
    assert category_names("imagenet16") == sorted(data["categories"])
    table = {**data["categories"], **data["other_categories"]}
    assert sorted(table) == categories()
    for c in categories():
        for i in range(1, N_INSTANCES + 1):
            m = build(c, i)
            assert m.imagenet_indices == tuple(table[c]) and m.category == c and m.instance == i
            assert m.mesh.is_volume or len(m.mesh.faces) > 0
            assert m.params, f"{m.name}: no recorded parameters"


def test_instances_are_seeded_and_differ():
    for c in categories():
        a, b = build(c, 1), build(c, 2)
        assert a.params != b.params, f"{c}: instances 1 and 2 drew the same parameters"
        again = build(c, 1, seed=0)
        assert np.array_equal(a.mesh.vertices, again.mesh.vertices)
        assert build(c, 1, seed=3).params != a.params
    with pytest.raises(ObjectError, match="instance=0"):
        build("cat", 0)
    with pytest.raises(ObjectError, match="unknown; available"):
        build("unicorn", 1)


@pytest.mark.parametrize("name", ["bicycle", "elephant", "chair", "clock"])
def test_compiled_rasteriser_matches_reference(name):
    m = build(name, 1)
    v = View(*m.view, longest_side=60, canvas=(64, 64))
    tri = project(m.mesh.vertices, v)[np.asarray(m.mesh.faces)]
    d1, f1 = rasterize(tri, 64, 64)
    d2, f2 = rasterize_reference(tri, 64, 64)
    assert np.array_equal(f1 >= 0, f2 >= 0)
    hit = f1 >= 0
    assert np.allclose(d1[hit], d2[hit])
    assert np.mean(f1 == f2) > 0.999  # only exact depth ties may pick another face


def test_rasteriser_agrees_with_ray_casting():
    """Independent check of coverage and depth: trimesh's ray-triangle test through every pixel centre."""
    m = build("dog", 2)
    v = View(30, 20, longest_side=40, canvas=(48, 48))
    verts = project(m.mesh.vertices, v)
    mesh = trimesh.Trimesh(verts, m.mesh.faces, process=False)
    depth, face = rasterize(verts[np.asarray(m.mesh.faces)], 48, 48)
    r, c = np.mgrid[0:48, 0:48] + 0.5
    origins = np.stack([c.ravel(), r.ravel(), np.full(r.size, verts[:, 2].min() - 10)], 1)
    dirs = np.tile([0, 0, 1.0], (len(origins), 1))
    hit = np.zeros(r.size, bool)
    _, idx, _ = trimesh.ray.ray_triangle.RayMeshIntersector(mesh).intersects_location(origins, dirs)
    hit[idx] = True
    # pixel centres exactly on a silhouette edge may go either way
    assert np.mean(hit.reshape(48, 48) == (face >= 0)) > 0.995


@pytest.mark.parametrize("az,inc,side", [(0, 0, 100), (35, 25, 150), (90, 60, 200), (-120, 10, 64)])
def test_longest_side_in_pixels(az, inc, side):
    m = build("truck", 1)
    sil = silhouette(buffers(m.mesh, View(az, inc, longest_side=side, canvas=(224, 224)), supersample=4)) > 0.5
    rows, cols = np.nonzero(sil)
    longest = max(np.ptp(rows), np.ptp(cols)) + 1
    assert abs(longest - side) <= 1.0
    assert abs((rows.min() + rows.max() + 1) / 2 - 112) <= 1 and abs((cols.min() + cols.max() + 1) / 2 - 112) <= 1


def _cube_buffers(az=0.0, inc=0.0, side=150):
    cube = trimesh.creation.box(extents=[1, 1, 1])
    return buffers(cube, View(az, inc, longest_side=side, canvas=(224, 224)), supersample=4)


@pytest.mark.parametrize("stroke", [1.0, 2.0, 3.5, 6.0])
def test_stroke_width_is_constant_and_as_requested(stroke):
    """A cube seen face-on is a square outline: across every scanline through the middle, the ink of the
    left and right strokes integrates to the requested width; the same for columns."""
    ink = line_drawing(_cube_buffers(), stroke)
    widths = [ink[r, :112].sum() for r in range(80, 145)] + [ink[r, 112:].sum() for r in range(80, 145)]
    widths += [ink[:112, c].sum() for c in range(80, 145)] + [ink[112:, c].sum() for c in range(80, 145)]
    assert abs(np.mean(widths) - stroke) < 0.15 and np.ptp(widths) < 0.05


def test_line_drawing_has_outline_and_creases_but_no_lines_on_smooth_surfaces():
    b = _cube_buffers(35, 30)
    sil = silhouette(b) > 0.5
    ink = line_drawing(b, 2.0)
    from scipy import ndimage

    inner = ndimage.binary_erosion(sil, iterations=6)
    assert ink[inner].max() > 0.9, "the three visible faces of a cube meet in crease lines"
    ring = sil & ~ndimage.binary_erosion(sil, iterations=1)
    assert ink[ring].min() > 0.3, "every outline pixel is inked"
    sphere = trimesh.creation.icosphere(subdivisions=4)
    bs = buffers(sphere, View(10, 20, longest_side=150, canvas=(224, 224)), supersample=3)
    inner = ndimage.binary_erosion(silhouette(bs) > 0.5, iterations=4)
    assert line_drawing(bs, 2.0)[inner].max() == 0, "a smooth sphere has only its outline"
    # an occluding contour: a small box in front of a big one, seen face-on (same normals, depth jump)
    front = trimesh.util.concatenate([trimesh.creation.box(extents=[2, 1, 2]),
                                      trimesh.creation.box(extents=[0.6, 0.2, 0.6]).apply_translation([0, -0.8, 0])])
    bf = buffers(front, View(0, 0, longest_side=150, canvas=(224, 224)), supersample=3)
    ink = line_drawing(bf, 2.0)
    # 75 px per unit: the small box's face spans columns and rows 112 ± 22.5; its left side is a depth jump
    assert ink[100:125, 87:92].max(axis=1).min() > 0.9, "occluding contour along the small box's left side"
    assert ink[95:130, 95:130].max() == 0 and ink[45:80, 45:80].max() == 0, "flat faces carry no lines"
    assert edge_mask(bf).sum() > 0


def test_bad_views_name_the_field():
    with pytest.raises(DrawingError, match="inclination_deg=95"):
        View(0, 95)
    with pytest.raises(DrawingError, match="longest_side=300"):
        View(0, 0, longest_side=300, canvas=(224, 224))
    with pytest.raises(DrawingError, match="stroke_px=0"):
        line_drawing(_cube_buffers(), 0)


def _real_silhouettes():
    from benchmarks.objects_silhouettes import shared_silhouettes

    folder = shared_silhouettes()
    if not folder.is_dir():
        pytest.skip(f"real silhouettes absent ({folder})")
    return folder


def test_procedural_silhouettes_are_named_by_a_classifier_trained_on_real_ones():
    """HOG descriptors of the silhouette + an RBF SVM (the pair that names held-out *real* silhouettes best)
    trained on the 160 real silhouettes (and mirrors) name every one of the 16 categories in at least 3 of
    its 5 instances at the benchmark's 224 px (chance 1/16; docs/objects.md), and most of them at 160 px;
    the old resized-mask + logistic pair stays far above chance."""
    from benchmarks.objects_silhouettes import evaluate, load_real, render_library

    real, real_y = load_real(_real_silhouettes())
    proc, proc_y, _ = render_library()
    _, pred = evaluate(real, real_y, proc, proc_y, "hog", "svm")
    named = {c: int(sum(p == c for p, y in zip(pred, proc_y) if y == c)) for c in set(proc_y)}
    assert min(named.values()) >= 3, named
    proc, proc_y, _ = render_library(size=160)
    acc, _ = evaluate(real, real_y, proc, proc_y, "hog", "svm")
    assert acc > 0.6, acc
    acc, _ = evaluate(real, real_y, proc, proc_y, "mask", "logistic")
    assert acc >= 0.3, acc


@pytest.mark.parametrize("name", ["oven", "bird"])
def test_edge_mask_matches_reference(name):
    m = build(name, 2)
    b = buffers(m.mesh, View(*m.view, longest_side=70, canvas=(80, 80)), supersample=2)
    e = edge_mask(b)
    assert e.sum() > 100 and np.array_equal(e, edge_mask_reference(b))


# ---------------------------------------------------------------------------------------------------------
# The categories beyond the 16 ImageNet classes: no classifier names them, so each test measures what the
# category claims from the model's parts (instances 1-5, seed 0).

def _parts(m, prefix: str) -> list:
    out = [mesh for name, mesh in m.parts if name.startswith(prefix)]
    assert out, f"{m.name}: no part named {prefix}*"
    return out


def _bounds(meshes) -> np.ndarray:
    return np.array([np.min([mm.bounds[0] for mm in meshes], 0), np.max([mm.bounds[1] for mm in meshes], 0)])


def _instances(category):
    return [build(category, i) for i in range(1, N_INSTANCES + 1)]


def test_category_groups_name_every_registered_category():
    from scenes.objects import BAKER2022, THREEDPC

    assert categories() == category_names() == sorted(set(category_names("imagenet16")) | set(THREEDPC) | set(BAKER2022))
    assert len(category_names("imagenet16")) == 16 and len(THREEDPC) == 10 and len(BAKER2022) == 9
    assert {"car", "chair"} <= set(category_names("imagenet16")) and {"bear", "cat", "elephant"} <= set(category_names("imagenet16"))
    # the other categories' ImageNet classes where ImageNet-1k has one (tiger 292, umbrella 879, park bench 703)
    assert build("tiger", 1).imagenet_indices == (292,) and build("umbrella", 1).imagenet_indices == (879,)
    assert build("bench", 1).imagenet_indices == (703,) and build("hydrant", 1).imagenet_indices == ()
    with pytest.raises(ObjectError, match="unknown; one of"):
        category_names("animals")


def test_bench_is_a_long_seat_on_four_legs_with_a_backrest_behind_and_above_it():
    for m in _instances("bench"):
        seat = _bounds(_parts(m, "seat_slat"))
        depth, length = seat[1, 0] - seat[0, 0], seat[1, 1] - seat[0, 1]
        assert length > 2.5 * depth, m.name
        legs = _parts(m, "front_leg") + _parts(m, "rear_leg")
        assert len(legs) == 4 and all(leg.bounds[0, 2] < 0.01 for leg in legs), f"{m.name}: four legs on the ground"
        back = _bounds(_parts(m, "back_slat"))
        assert back[0, 2] > seat[1, 2] and back[1, 0] < seat[0, 0] + 0.02, f"{m.name}: backrest above and behind the seat"


def test_couch_has_a_long_seat_a_back_above_its_arms_and_an_arm_at_each_end():
    for m in _instances("couch"):
        cushions, arms = _bounds(_parts(m, "cushion")), _parts(m, "arm_roll")
        back = dict(m.parts)["back"].bounds
        size = m.mesh.extents
        assert size[1] > 1.8 * size[0], m.name
        assert sorted(np.sign(a.centroid[1]) for a in arms) == [-1, 1], f"{m.name}: an arm at each end"
        assert min(a.bounds[1, 2] for a in arms) > cushions[1, 2] + 0.05, f"{m.name}: arms above the seat"
        assert back[1, 2] > max(a.bounds[1, 2] for a in arms), f"{m.name}: the back is the highest part"
        assert back[1, 0] < cushions[0, 0] + 0.05, f"{m.name}: the back behind the seat"


def test_hydrant_is_a_tall_barrel_with_nozzles_sticking_out_and_a_cap_on_top():
    for m in _instances("hydrant"):
        barrel = _parts(m, "barrel")[0]
        r = barrel.extents[0] / 2
        assert m.mesh.extents[2] > 2.4 * (2 * r), f"{m.name}: taller than 2.4 barrel diameters"
        hose = _parts(m, "hose_nozzle")
        assert sorted(np.sign(h.centroid[1]) for h in hose) == [-1, 1]
        assert all(abs(h.bounds[:, 1]).max() > 1.4 * r for h in hose), f"{m.name}: side nozzles stick out"
        assert _parts(m, "pumper")[0].bounds[1, 0] > 1.4 * r, f"{m.name}: the pumper nozzle sticks out in front"
        assert _parts(m, "cap")[0].bounds[0, 2] >= barrel.bounds[1, 2] - 1e-6, f"{m.name}: the cap sits on the barrel"


def test_laptop_base_is_thin_and_its_lid_opens_at_the_recorded_angle_from_the_rear_edge():
    for m in _instances("laptop"):
        base = _parts(m, "base")[0]
        assert base.extents[2] < 0.06 * base.extents[1], m.name
        lid = _parts(m, "lid")[0]
        # the lid's direction in the side view (its largest principal direction in x-z), against the base's
        # front (+x): the lid rises up and back from the hinge
        v = (lid.vertices - lid.vertices.mean(0))[:, [0, 2]]
        axis = np.linalg.eigh(v.T @ v)[1][:, -1]
        axis *= np.sign(axis[1])
        angle = np.degrees(np.arctan2(axis[1], -axis[0]))  # above the base, measured behind the hinge
        assert abs((180 - angle) - m.params["open_deg"]) < 1.0, (m.name, angle)
        assert lid.bounds[0, 0] < base.bounds[0, 0] + 0.01, f"{m.name}: hinged at the rear edge"
        keys = _parts(m, "key")
        assert len(keys) >= 50 and min(k.bounds[0, 2] for k in keys) >= base.bounds[1, 2] - 1e-6, "keys on the base"


def test_motorcycle_has_two_wheels_on_the_ground_a_handlebar_over_the_front_one_and_a_seat_between():
    for m in _instances("motorcycle"):
        rear, front = _parts(m, "rear_tyre")[0], _parts(m, "front_tyre")[0]
        r = front.extents[2] / 2
        assert abs(rear.bounds[0, 2]) < 1e-3 and abs(front.bounds[0, 2]) < 1e-3, f"{m.name}: wheels on the ground"
        assert front.centroid[0] - rear.centroid[0] > 3 * r, f"{m.name}: wheelbase longer than three wheel radii"
        bar = _parts(m, "handlebar")[0]
        assert bar.bounds[0, 2] > 2 * r and bar.centroid[0] > 0, f"{m.name}: handlebar high, over the front half"
        assert bar.extents[1] > 0.25, f"{m.name}: handlebar across the bike"
        seat = _parts(m, "seat")[0]
        assert rear.centroid[0] < seat.centroid[0] < front.centroid[0] and seat.bounds[0, 2] > 2 * r * 0.9


def test_plant_leaves_rise_out_of_a_pot_and_spread_wider_than_it():
    for m in _instances("plant"):
        pot = _parts(m, "pot")[0]
        assert pot.bounds[0, 2] == pytest.approx(0, abs=1e-9)
        r_bottom = np.abs(pot.vertices[pot.vertices[:, 2] < 1e-6, :2]).max()
        assert pot.extents[0] / 2 > 1.2 * r_bottom, f"{m.name}: the pot widens upwards"
        leaves = _parts(m, "leaf")
        assert len(leaves) >= 9 and all(leaf.bounds[0, 2] > 0.8 * pot.bounds[1, 2] for leaf in leaves)
        spread = np.abs(np.concatenate([leaf.vertices[:, :2] for leaf in leaves])).max()
        assert spread > 1.3 * pot.extents[0] / 2, f"{m.name}: the leaves spread wider than the pot"
        assert m.mesh.bounds[1, 2] > 1.3 * pot.bounds[1, 2], f"{m.name}: the leaves rise above the pot"


def test_suitcase_is_an_upright_box_on_wheels_with_a_top_handle_and_a_pulled_out_handle():
    for m in _instances("suitcase"):
        shell = _parts(m, "shell")[0]
        d, w, h = shell.extents
        assert h > w > d, m.name
        wheels = _parts(m, "wheel")
        assert len(wheels) == 4 and all(wh.bounds[0, 2] < 1e-6 and wh.bounds[1, 2] < 0.1 for wh in wheels)
        assert _parts(m, "top_handle")[0].bounds[0, 2] >= shell.bounds[1, 2] - 0.02
        assert _parts(m, "pull_grip")[0].bounds[0, 2] > shell.bounds[1, 2] + 0.1, f"{m.name}: handle pulled out"


def test_umbrella_canopy_at_the_top_is_wider_than_the_pole_is_long_with_a_hook_below():
    for m in _instances("umbrella"):
        canopy, pole, handle = _parts(m, "canopy")[0], _parts(m, "pole")[0], _parts(m, "handle")[0]
        H = m.mesh.bounds[1, 2]
        assert canopy.bounds[0, 2] > 0.6 * H, f"{m.name}: the canopy is at the top"
        assert canopy.extents[0] > pole.extents[2], f"{m.name}: canopy wider than the pole is long"
        assert pole.extents[0] < 0.05 * canopy.extents[0], f"{m.name}: a thin pole"
        assert handle.bounds[1, 2] < 0.25 * H and handle.bounds[0, 2] < 0.005, f"{m.name}: the hook at the bottom"
        assert handle.extents[0] > 0.08, f"{m.name}: the handle hooks sideways"


def test_bunny_has_long_ears_rising_above_its_head_and_a_tail_behind():
    for m in _instances("bunny"):
        head, ears = _parts(m, "head")[0], _parts(m, "ear")
        for ear in ears:
            tip = ear.vertices[np.argmax(np.linalg.norm(ear.vertices - head.centroid, axis=1))]
            assert np.linalg.norm(tip - head.centroid) > 1.8 * head.extents[0] / 2, f"{m.name}: long ears"
        assert max(e.bounds[1, 2] for e in ears) > head.bounds[1, 2] + head.extents[2], f"{m.name}: ears up"
        assert _parts(m, "tail")[0].centroid[0] < _parts(m, "body")[0].bounds[0, 0] + 0.1, f"{m.name}: tail at the rear"


def test_frog_sits_wide_with_eyes_on_top_of_the_head_folded_hind_legs_and_no_tail():
    for m in _instances("frog"):
        head, body = _parts(m, "head")[0], _parts(m, "body")[0]
        assert all(e.bounds[1, 2] > head.bounds[1, 2] for e in _parts(m, "eye")), f"{m.name}: bulging eyes"
        for sy in (1, -1):
            thigh, shin = _parts(m, f"thigh{sy}")[0], _parts(m, f"shin{sy}")[0]
            # folded: the thigh runs forward from the hip, the shin back from the knee, below the body's top
            assert thigh.vertices[:, 0].max() > body.centroid[0] - 0.05 and shin.bounds[0, 0] < body.bounds[0, 0] + 0.05
            assert _parts(m, f"hind_foot{sy}")[0].bounds[0, 2] < 0.01, f"{m.name}: feet on the ground"
        assert m.mesh.extents[1] > 0.6 * m.mesh.extents[0], f"{m.name}: wide"
        assert not [n for n, _ in m.parts if n.startswith("tail")]


def test_lizard_is_long_and_low_with_a_tail_longer_than_its_body_and_legs_splayed_sideways():
    for m in _instances("lizard"):
        body, tail = _parts(m, "body")[0], _parts(m, "tail")[0]
        assert tail.extents[0] > body.extents[0], f"{m.name}: tail longer than the body"
        assert m.mesh.extents[2] < 0.15 * m.mesh.extents[0], f"{m.name}: low"
        legs = _parts(m, "leg")
        assert len(legs) == 4 and all(np.abs(leg.bounds[:, 1]).max() > 1.5 * body.extents[1] / 2 for leg in legs)
        assert all(leg.bounds[0, 2] < 0.02 for leg in legs), f"{m.name}: feet on the ground"


def test_turtle_has_a_shell_wider_than_tall_with_head_and_four_limbs_sticking_out():
    for m in _instances("turtle"):
        shell = _parts(m, "shell")[0]
        assert shell.extents[1] > 1.5 * shell.extents[2], m.name
        assert _parts(m, "head")[0].bounds[1, 0] > shell.bounds[1, 0], f"{m.name}: head out in front"
        limbs = [mesh for name, mesh in m.parts if "leg" in name or "flipper" in name]
        assert len(limbs) == 4
        for limb in limbs:  # each beyond the shell's outline seen from above, or reaching the ground below it
            out = (limb.vertices[:, 0] / (shell.extents[0] / 2)) ** 2 + (limb.vertices[:, 1] / (shell.extents[1] / 2)) ** 2
            assert out.max() > 1.0 or limb.bounds[0, 2] < 0.01, m.name


def test_tiger_and_wolf_stand_on_four_legs_tiger_striped_wolf_with_a_hanging_bushy_tail():
    for c in ("tiger", "wolf"):
        for m in _instances(c):
            paws = _parts(m, "front_paw") + _parts(m, "hind_paw")
            assert len(paws) == 4 and all(p.bounds[0, 2] < 0.01 for p in paws), m.name
            tail = _parts(m, "tail")[0]
            base = tail.vertices[np.argmax(tail.vertices[:, 0])]
            tip = tail.vertices[np.argmin(tail.vertices[:, 0])]
            assert tip[2] < base[2], f"{m.name}: the tail hangs"
            if c == "tiger":
                stripes = _parts(m, "stripe")
                chest = _parts(m, "chest")[0]
                assert len(stripes) >= 8 and all(s.bounds[1, 2] <= chest.bounds[1, 2] + 0.05 for s in stripes)
            else:
                assert tail.extents[1] > 0.07, f"{m.name}: a bushy tail"
                assert _parts(m, "snout")[0].extents[0] > 0.8 * _parts(m, "head")[0].extents[0] / 2, "long muzzle"
