"""Where a submission enters: files walked without links, sizes bounded before reading, zips
checked member by member, student ids checked."""

from __future__ import annotations

import os
import zipfile

import pytest

from autograd_course.grading import intake


def test_a_submission_brings_regular_files_within_the_limits(tmp_path):
    folder = tmp_path / "sub"
    (folder / "data").mkdir(parents=True)
    (folder / "toy.ipynb").write_text("{}")
    (folder / "data" / "small.csv").write_text("1,2\n")
    with open(folder / "data" / "huge.bin", "wb") as f:
        f.truncate(5_000_000)  # sparse: nothing is read to measure it
    os.symlink("/etc/hostname", folder / "link.txt")
    os.mkfifo(folder / "pipe")
    found = intake.scan(folder, max_bytes=1_000_000)
    assert sorted(found.paths) == ["data/small.csv", "toy.ipynb"]
    assert found.oversized == {"data/huge.bin": 5_000_000}
    said = " | ".join(found.left_out)
    assert "link.txt: a link or a special file" in said and "pipe: a link" in said
    assert "data/huge.bin: 5000 kB, more than the limit of 1000 kB" in said
    copy = tmp_path / "copy"
    intake.copy_files(found, copy)
    assert sorted(p.name for p in copy.rglob("*") if p.is_file()) == ["small.csv"]
    assert oct(os.stat(copy / "data" / "small.csv").st_mode)[-3:] == "644"


def _zip(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_a_zip_is_bounded_in_total_and_its_members_by_their_declared_size(tmp_path):
    archive = _zip(tmp_path / "a.zip", {f"s{i}/a/f.ipynb": bytes(600) for i in range(3)})
    with pytest.raises(intake.IntakeError, match="more than 0 MB .at member 's1/a/f.ipynb'"):
        intake.unpack_zip(archive, tmp_path / "submitted", max_bytes=1000, max_total=1000)
    assert not (tmp_path / "submitted").exists()  # nothing unpacked
    # a header that says 100 bytes for a member of 5 MB: no more than 100 are read
    forged = _zip(tmp_path / "forged.zip", {"s/a/big.bin": bytes(5 * 10**6)})
    data = bytearray(forged.read_bytes())
    real = (5 * 10**6).to_bytes(4, "little")
    assert data.count(real) == 2  # the local header and the central directory
    data = data.replace(real, (100).to_bytes(4, "little"))
    forged.write_bytes(bytes(data))
    with pytest.raises(intake.IntakeError, match="member 's/a/big.bin' is damaged .Bad CRC"):
        intake.unpack_zip(forged, tmp_path / "submitted", max_bytes=1000)
    assert list((tmp_path / "submitted").rglob("*")) == []  # nothing unpacked, no staging left


@pytest.mark.parametrize("student", ["ada", "ada.lovelace", "ada+1@uni.edu", "s-01_x"])
def test_ordinary_student_ids_are_accepted(student):
    assert intake.check_student(student) == student


@pytest.mark.parametrize("student", ["", ".hidden", "a/b", "<script>", "a b", "é", "x" * 129,
                                     "\x1b[2K"])
def test_other_names_are_not_student_ids(student):
    with pytest.raises(intake.IntakeError, match="is not a student id"):
        intake.check_student(student)


def test_a_file_name_that_is_not_utf8_gets_a_fingerprint(tmp_path):
    """os.walk gives such a name as surrogates; the run's fingerprint of the submission (which
    decides what to regrade) must take it, not stop the class with a UnicodeEncodeError."""
    from autograd_course.grading import tasks

    (tmp_path / os.fsdecode(b"\xff.txt")).write_bytes(b"data")
    (tmp_path / "a.txt").write_bytes(b"data")
    files = tasks.read_files(tmp_path)
    assert len(files) == 2
    assert tasks.digest_of(files) != tasks.digest_of({"a.txt": b"data"})
    assert tasks.digest_of(files, {os.fsdecode(b"\xfe"): 9}) != tasks.digest_of(files)
