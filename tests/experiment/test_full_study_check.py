"""docs/scripts/full_study_check.py: the retrained models and their numbers against the full study's record."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
check = load_script(ROOT / "docs" / "scripts" / "full_study_check.py")


def test_leaves_flattens_rows_by_path_and_skips_flags():
    row = {"R@1": 0.5, "risk": {"b": -0.1, "p": None, "R@1 against b (test)": {"0.0": 0.4}},
           "nota": {"F1": [0.25, 0.75]}, "converged": True}
    assert check.leaves(row) == {"R@1": 0.5, "risk/b": -0.1, "risk/R@1 against b (test)/0.0": 0.4,
                                 "nota/F1/0": 0.25, "nota/F1/1": 0.75}


def test_compare_numbers_counts_equal_numbers_names_the_others_and_ignores_comparisons_with_bert():
    reference = {"results": {"in-domain": {
        "bert": {"R@1": 0.5, "MAP": 0.6},
        "sngp": {"R@1": 0.4, "MAP": 0.55, "R@1 change vs bert %": -20.0, "R@1 p (Holm) vs bert": 0.01},
        "ensemble": {"R@1": 0.6},
    }}}
    retrained = {"results": {"in-domain": {
        "bert": {"R@1": 0.5, "MAP": 0.6},
        "sngp": {"R@1": 0.4, "MAP": 0.5, "R@1 change vs bert %": -3.0, "R@1 p (Holm) vs bert": 0.9},
        "pgdrr": {"R@1": 0.3},  # not in the reference: not compared
    }}}
    out = check.compare_numbers(reference, retrained)
    assert set(out) == {"bert", "sngp"}
    assert out["bert"]["in-domain"] == {"numbers": 2, "equal": 2, "max abs difference": 0.0, "differ": {}}
    sngp = out["sngp"]["in-domain"]
    assert (sngp["numbers"], sngp["equal"]) == (2, 1)
    assert sngp["max abs difference"] == pytest.approx(0.05)
    assert sngp["differ"] == {"MAP": {"full study": 0.55, "retrained": 0.5}}


def _model(folder: Path, losses: list[float], weights: bytes) -> None:
    folder.mkdir(parents=True)
    (folder / "uncertank.json").write_text(json.dumps({"history": {"loss": losses}}))
    (folder / "model.safetensors").write_bytes(weights)


def test_compare_models_matches_bert_to_member_0_and_digests_the_weights(tmp_path):
    losses = [0.7 - 0.01 * i for i in range(25)]
    _model(tmp_path / "bert", losses, b"weights")
    _model(tmp_path / "sngp", [0.5] * 12, b"other")
    _model(tmp_path / "bert_lists", [0.3] * 12, b"lists")  # no reference record: digest and losses only
    (tmp_path / "study").mkdir()  # a folder without a model is skipped
    # the reference run averaged with numpy, as the check does: the same losses give the same bits
    first, last = float(np.mean(losses[:10])), float(np.mean(losses[-10:]))
    training = {
        "member_0": {"steps": 25, "mean_loss_first_10_steps": first, "mean_loss_last_10_steps": last},
        "sngp": {"steps": 12, "mean_loss_first_10_steps": 0.5, "mean_loss_last_10_steps": 0.4},
    }
    out = check.compare_models(tmp_path, training)
    assert set(out) == {"bert", "sngp", "bert_lists"}
    assert out["bert"]["weights sha256"] == hashlib.sha256(b"weights").hexdigest()
    assert out["bert"]["retrained"]["mean loss first 10"] == first
    assert out["bert"]["equal"] is True
    assert out["sngp"]["equal"] is False  # its last ten losses moved
    assert "equal" not in out["bert_lists"] and "full study" not in out["bert_lists"]


@pytest.mark.parametrize("missing", ["summary", "--training", "--reference", "--models"])
def test_the_cli_names_the_input_that_is_missing(tmp_path, missing):
    files = {name: tmp_path / f"{name.strip('-')}.json" for name in ("summary", "--training", "--reference")}
    for path in files.values():
        path.write_text(json.dumps({"training": {}, "results": {}}))
    models = tmp_path / "models"
    models.mkdir()
    if missing == "--models":
        models.rmdir()
    else:
        files[missing].unlink()
    argv = [str(files["summary"]), "--training", str(files["--training"]), "--reference", str(files["--reference"]),
            "--models", str(models), "--out", str(tmp_path / "out.json")]
    with pytest.raises(SystemExit, match=f"^{missing}: expected"):
        check.main(argv)
    assert not (tmp_path / "out.json").exists()


def test_the_cli_refuses_a_training_file_without_a_training_record(tmp_path):
    for name in ("summary", "reference"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": {}}))
    (tmp_path / "training.json").write_text(json.dumps({"results": {}}))
    argv = [str(tmp_path / "summary.json"), "--training", str(tmp_path / "training.json"),
            "--reference", str(tmp_path / "reference.json"), "--models", str(tmp_path),
            "--out", str(tmp_path / "o.json")]
    with pytest.raises(SystemExit, match="--training: expected a file with a 'training' object"):
        check.main(argv)


def test_compare_bayes_sets_each_family_beside_the_full_studys():
    reference = {"bayes": {"zoib": {"converged": True, "n_systems": 3, "diagnostics": {"max_rhat": 1.01},
                                    "best_distinguishable": ["a"]},
                           "gaussian": {"converged": True, "n_systems": 3}}}
    retrained = {"bayes": {"zoib": {"converged": True, "n_systems": 3, "diagnostics": {"max_rhat": 1.02},
                                    "best_distinguishable": ["b"]}}}
    out = check.compare_bayes(reference, retrained)
    assert set(out) == {"zoib"}
    assert (out["zoib"]["numbers"], out["zoib"]["equal"]) == (2, 1)
    assert out["zoib"]["differ"] == {"diagnostics/max_rhat": {"full study": 1.01, "retrained": 1.02}}
    assert out["zoib"]["converged"] == {"full study": True, "retrained": True}
    assert out["zoib"]["same verdicts"] is False


RECORD = json.loads((ROOT / "docs" / "results" / "full_study_check.json").read_text())
STUDY_MD = " ".join((ROOT / "docs" / "study.md").read_text().split())
RANKING = ("R@1", "MAP", "AURC", "risk/")


def test_the_retrained_models_are_the_full_studys():
    models = RECORD["models"]
    assert all(models[m]["equal"] for m in ("bert", "sngp", "gpf_bert", "pgdrr", *(f"member_{i}" for i in range(5))))
    assert models["member_0"]["weights sha256"] == models["bert"]["weights sha256"]
    frontier = json.loads((ROOT / "docs" / "results" / "mc_dropout_frontier.json").read_text())
    first = [v for v in frontier.values() if isinstance(v, dict) and "model_sha256" in v and
             len(v["model_sha256"]) == 12]
    assert models["bert"]["weights sha256"].startswith("d058b0a5075f")
    assert "SHA-256 `d058b0a5075f...`" in STUDY_MD and (not first or first[0]["model_sha256"] == "d058b0a5075f")


def test_the_checked_numbers_are_what_the_study_page_says():
    numbers = RECORD["numbers"]
    assert all(v["equal"] == v["numbers"] for v in numbers["bm25"].values())
    gaps = []
    for ranker in ("bert", "sngp", "gpf_bert"):
        for cond in numbers[ranker].values():
            assert not [k for k in cond["differ"] if k.startswith(RANKING)], ranker
            gaps.append(cond["max abs difference"])
    mantissa, exponent = f"{max(gaps):.1e}".split("e")
    assert f"agree to {mantissa}e{int(exponent)}," in STUDY_MD
    assert all(b["same verdicts"] and b["equal"] == b["numbers"] for b in RECORD["bayes"].values())
    pg = numbers["pgdrr"]
    r1 = pg["cross-NS embedding"]["differ"]["R@1"]
    assert f"R_10@1 under cross-NS embedding is {r1['retrained']:.3f} against {r1['full study']:.3f}" in STUDY_MD
    nota = {k.split("/", 1)[1]: v["retrained"] for k, v in pg["in-domain"]["differ"].items() if k.startswith("nota/")}
    assert (f"{nota['F1 means']:.3f} ± {nota['F1 means sd']:.3f} from the means and "
            f"{nota['F1 means+var']:.3f} ± {nota['F1 means+var sd']:.3f} with the variances, p {nota['p']:.2f}"
            ) in STUDY_MD


def test_the_kernel_numbers_on_the_study_page_come_from_the_record():
    runs = json.loads((ROOT / "docs" / "results" / "kernel_sensitivity.json").read_text())["runs"]
    given = runs["as the machine gives it"]["mean loss first 10"]
    assert given == RECORD["models"]["bert"]["retrained"]["mean loss first 10"]
    assert (f"{runs['AVX2 kernels']['mean loss first 10']:.10f} and "
            f"{runs['one thread']['mean loss first 10']:.10f} against {given:.10f}") in STUDY_MD


def test_the_cli_reads_every_models_folder_and_writes_one_record(tmp_path):
    _model(tmp_path / "real_run" / "bert", [0.7] * 10, b"w")
    _model(tmp_path / "ensemble" / "member_1", [0.6] * 10, b"m1")
    record = {"member_0": {"steps": 10, "mean_loss_first_10_steps": 0.7, "mean_loss_last_10_steps": 0.7},
              "member_1": {"steps": 10, "mean_loss_first_10_steps": 0.6, "mean_loss_last_10_steps": 0.5}}
    (tmp_path / "training.json").write_text(json.dumps({"training": record}))
    summary = {"results": {"in-domain": {"bert": {"R@1": 0.5}}}, "bayes": {}}
    for name in ("summary", "reference"):
        (tmp_path / f"{name}.json").write_text(json.dumps(summary))
    check.main([str(tmp_path / "summary.json"), "--training", str(tmp_path / "training.json"),
                "--reference", str(tmp_path / "reference.json"), "--out", str(tmp_path / "out.json"),
                "--models", str(tmp_path / "real_run"), str(tmp_path / "ensemble")])
    out = json.loads((tmp_path / "out.json").read_text())
    assert {k: v["equal"] for k, v in out["models"].items()} == {"bert": True, "member_1": False}
    assert out["numbers"]["bert"]["in-domain"]["equal"] == 1 and "machine" in out
