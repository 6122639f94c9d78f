"""check_output_paths: outputs never overwrite inputs or each other, and can be written, before any run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specmeter.measuring import MeasureError, check_output_paths


def problems(outputs: dict[str, object], inputs: dict[str, object] | None = None) -> list[str]:
    try:
        check_output_paths(outputs, inputs)  # type: ignore[arg-type]
    except MeasureError as e:
        return e.lines
    return []


def test_good_outputs_pass_and_none_is_ignored(tmp_path: Path) -> None:
    # An earlier output of the same kind is replaced: that is its job (someone else's file is not: issue 29).
    (tmp_path / "old.json").write_text('{"schema_version": 1, "kind": "bench"}')
    assert (
        problems({"--json": tmp_path / "old.json", "--csv": None, "--log": tmp_path / "new" / "r.jsonl"})
        == []
    )


def test_output_equal_to_an_input(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("{}\n")
    out = problems({"--csv": golden}, {"--prompts": golden})
    assert out == [f"--csv: {golden} is --prompts ({golden}); an output never overwrites an input"]


def test_other_spellings_and_links_of_an_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("{}\n")
    (tmp_path / "link.jsonl").symlink_to(golden)
    os.link(golden, tmp_path / "hard.jsonl")
    monkeypatch.chdir(tmp_path)
    for spelling in (Path("golden.jsonl"), tmp_path / "sub" / ".." / "golden.jsonl", tmp_path / "link.jsonl"):
        assert len(problems({"--json": spelling}, {"--prompts": golden})) == 1, spelling
    assert len(problems({"--json": tmp_path / "hard.jsonl"}, {"--prompts": golden})) == 1


def test_output_inside_a_list_of_inputs(tmp_path: Path) -> None:
    drafts = [tmp_path / "a", tmp_path / "b"]
    for d in drafts:
        d.mkdir()
    out = problems({"--json": tmp_path / "b"}, {"--draft": drafts})
    assert len(out) == 1 and "is --draft" in out[0]


def test_two_outputs_on_one_file(tmp_path: Path) -> None:
    out = problems({"--json": tmp_path / "r", "--csv": tmp_path / "x", "--log": tmp_path / "r"})
    assert out == [f"--log: {tmp_path / 'r'} is also --json; every output needs its own file"]


def test_three_outputs_on_one_file_are_one_problem(tmp_path: Path) -> None:
    out = problems({"--json": tmp_path / "r", "--csv": tmp_path / "r", "--log": tmp_path / "r"})
    assert out == [f"--csv, --log: {tmp_path / 'r'} is also --json; every output needs its own file"]


def test_directory_and_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    out = problems({"--json": tmp_path / "dir", "--csv": tmp_path / "file" / "r.csv"})
    assert out == [
        f"--json: {tmp_path / 'dir'} is a directory; give a file path",
        f"--csv: cannot write {tmp_path / 'file' / 'r.csv'}: {tmp_path / 'file'} is not a directory",
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_parent(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        out = problems({"--json": locked / "new" / "r.json"})
    finally:
        locked.chmod(0o700)
    assert out == [
        f"--json: cannot write {locked / 'new' / 'r.json'}: no permission to create files in {locked}"
    ]


def test_unwritable_parent_as_any_user_sees_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root may write anywhere, so the permission is simulated: the check asks os.access, as the OS would.
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "old.json").write_text("")  # empty: specmeter may replace it, if only it could write there
    monkeypatch.setattr(
        "specmeter.measuring.outputs.os.access",
        lambda path, mode: Path(path) != locked and Path(path).parent != locked,
    )
    assert problems({"--json": locked / "new" / "r.json", "--csv": locked / "old.json"}) == [
        f"--json: cannot write {locked / 'new' / 'r.json'}: no permission to create files in {locked}",
        f"--csv: cannot write {locked / 'old.json'}: permission denied",
    ]


def test_a_file_inside_an_input_directory(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    out = problems({"--json": model / "config.json", "--csv": model / "new.csv"}, {"--target": model})
    assert out == [
        f"--json: {model / 'config.json'} is a file in --target ({model}); "
        "an output never overwrites an input"
    ]


def test_output_directories(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "target").mkdir()
    (tmp_path / "existing").mkdir()
    dirs = {
        "--out": tmp_path / "file",
        "--work": tmp_path / "target",
        "--cache": tmp_path / "existing",  # an existing directory is filled (train resumes in its --work)
        "--new": tmp_path / "a" / "b",  # created when written
    }
    out = _dir_problems(dirs, {"--target": tmp_path / "target"})
    assert out == [
        f"--out: {tmp_path / 'file'} is a file; give a directory",
        f"--work: {tmp_path / 'target'} is --target ({tmp_path / 'target'}); "
        "an output never overwrites an input",
    ]


def test_a_file_system_that_refuses_files(tmp_path: Path) -> None:
    # /proc says "writable" to root's access(); only creating a file there shows it is not.
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    assert problems({"--json": Path("/proc/r.json")}) == [
        "--json: cannot write /proc/r.json: no permission to create files in /proc"
    ]
    assert not [p for p in tmp_path.iterdir()]  # the probe leaves nothing behind
    assert problems({"--json": tmp_path / "r.json"}) == [] and not list(tmp_path.iterdir())


def _dir_problems(directories: dict[str, Path], inputs: dict[str, Path]) -> list[str]:
    try:
        check_output_paths({}, inputs, directories=directories)  # type: ignore[arg-type]
    except MeasureError as e:
        return e.lines
    return []


def test_names_the_file_system_cannot_hold_are_refused_before_anything_touches_them(tmp_path: Path) -> None:
    # Issue 29: a 300-character --json name was an OSError errno 36 traceback.
    name_max = os.pathconf(tmp_path, "PC_NAME_MAX")
    path_max = os.pathconf(tmp_path, "PC_PATH_MAX")
    long = "x" * (name_max + 1)
    assert problems({"--json": tmp_path / long}) == [
        f"--json: the name '{long[:20]}…{long[-12:]}' is {name_max + 1} bytes long; this file system allows "
        f"{name_max}"
    ]
    # A missing directory on the way is created at write time: its name must fit too. Bytes count, not
    # characters: 128 × "é" is 256 bytes.
    assert "is 256 bytes long" in problems({"--out": tmp_path / ("é" * 128) / "r.json"})[0]
    deep = tmp_path.joinpath(*["d" * 200] * (path_max // 200 + 1), "r.json")
    (line,) = problems({"--log": deep})
    assert line.startswith("--log: the path is ") and line.endswith(f"allows {path_max - 1}")
    # An input of such a name cannot exist; it is named too instead of raising in the comparisons.
    assert problems({"--json": tmp_path / "r.json"}, {"--prompts": tmp_path / long})[0].startswith(
        "--prompts: the name"
    )
    assert problems({"--json": tmp_path / "a\0b"}) == ["--json: a file name cannot hold a NUL byte"]
    assert problems({"--json": tmp_path / ("y" * name_max)}) == []  # the limit itself is a legal name
