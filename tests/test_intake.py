"""Where a submission enters: files walked without links, sizes bounded before reading, zips
checked member by member, student ids checked."""

from __future__ import annotations

import os
import shutil
import struct
import zipfile
from datetime import datetime

import pytest
from support.commands import run

from autograd_course import cli
from autograd_course.grading import intake, zips
from autograd_course.grading.course import Course


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
        zips.unpack_zip(archive, tmp_path / "submitted", max_bytes=1000, max_total=1000)
    assert not (tmp_path / "submitted").exists()  # nothing unpacked
    # a header that says 100 bytes for a member of 5 MB: no more than 100 are read
    forged = _zip(tmp_path / "forged.zip", {"s/a/big.bin": bytes(5 * 10**6)})
    data = bytearray(forged.read_bytes())
    real = (5 * 10**6).to_bytes(4, "little")
    assert data.count(real) == 2  # the local header and the central directory
    data = data.replace(real, (100).to_bytes(4, "little"))
    forged.write_bytes(bytes(data))
    with pytest.raises(intake.IntakeError, match="member 's/a/big.bin' is damaged .Bad CRC"):
        zips.unpack_zip(forged, tmp_path / "submitted", max_bytes=1000)
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


# -- layouts, timestamps and resubmissions of a zip ------------------------------------------
A = "01_gradients"
NB = f"{A}.ipynb"
LMS_IDS = {"48213": "rosa", "48214": "tess"}


def _dated(path, members: dict[str, bytes], when=(2026, 12, 4, 10, 0, 0)):
    """A zip whose members all carry the date ``when`` (local time, no zone, as zips do)."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def _unpack(archive, root, **options):
    return zips.unpack_zip(archive, root / "submitted", 10**6, assignments=[A, "02_chain"],
                           **options)


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_canvas_download_is_mapped_through_the_roster_with_its_dates(tmp_path):
    archive = _dated(tmp_path / "submissions.zip", {
        f"garciarosa_48213_9921001_{NB}": b"rosa's",
        # a late resubmission: Canvas appends -1 to the file's name
        f"wongtess_late_48214_9921002_{A}-1.ipynb": b"tess's",
        "wongtess_late_48214_9921002_data-1.csv": b"1,2",
    })
    done = _unpack(archive, tmp_path, layout="canvas", assignment=A, lms_ids=LMS_IDS,
                   notebooks=[NB])
    assert (done.added, done.submissions) == (3, 2)
    sub = tmp_path / "submitted"
    assert (sub / "rosa" / A / NB).read_bytes() == b"rosa's"
    assert (sub / "tess" / A / NB).read_bytes() == b"tess's"
    assert (sub / "tess" / A / "data-1.csv").is_file()  # only a notebook's name is restored
    assert (sub / "rosa" / A / "timestamp.txt").read_text() == "2026-12-04 10:00:00.000000 UTC"


@pytest.mark.parametrize("folders", [True, False])
def test_a_moodle_download_in_folders_or_flat(tmp_path, folders):
    sep = "/" if folders else ""
    archive = _dated(tmp_path / "moodle.zip", {
        f"Rosa Garcia_48213_assignsubmission_file_{sep}{NB}": b"rosa's",
        f"Tess Wong_48214_assignsubmission_file_{sep}{NB}": b"tess's",
        "Tess Wong_48214_assignsubmission_onlinetext_onlinetext.html": b"<p>hi</p>",
    })
    done = _unpack(archive, tmp_path, layout="moodle", assignment=A, lms_ids=LMS_IDS,
                   notebooks=[NB])
    assert done.submissions == 2
    assert (tmp_path / "submitted" / "tess" / A / NB).read_bytes() == b"tess's"
    assert any("left out Tess Wong_48214_assignsubmission_onlinetext_" in line
               for line in done.lines)


def test_an_lms_id_the_roster_does_not_know_refuses_the_zip(tmp_path):
    archive = _dated(tmp_path / "c.zip", {f"garciarosa_48213_1_{NB}": b"x",
                                          f"doejane_50000_2_{NB}": b"y"})
    with pytest.raises(intake.IntakeError, match="Canvas id 50000 is not in the roster's "
                       "lms_user_id column"):
        _unpack(archive, tmp_path, layout="canvas", assignment=A, lms_ids=LMS_IDS,
                notebooks=[NB])
    assert _files(tmp_path) == ["c.zip"]


@pytest.mark.parametrize(("layout", "member", "says"), [
    ("course", NB, "is not inside STUDENT/ASSIGNMENT/"),
    ("course", f"class/rosa/{A}/{NB}", "is inside a wrapping folder 'class/'"),
    ("course", f"{A}/rosa/{NB}", f"starts with the assignment {A} (ASSIGNMENT/STUDENT/FILE?)"),
    ("course", f"tess/01_Gradients/{NB}", f"the assignment {A} only up to case"),
    ("course", f"wongtess_48214_9921002_{NB}", "is not inside STUDENT/ASSIGNMENT/"),
    ("course", f"rosa/homework/{NB}", "not an assignment of this course"),
    ("canvas", f"rosa/{A}/{NB}", "is not named as Canvas names"),
    ("canvas", f"Tess Wong_48214_assignsubmission_file_/{NB}", "is not named as Canvas names"),
    ("moodle", f"wongtess_48214_9921002_{NB}", "is not named as Moodle names"),
])
def test_a_zip_in_another_layout_writes_nothing_and_names_the_layout(tmp_path, layout,
                                                                     member, says):
    archive = _dated(tmp_path / "x.zip", {member: b"{}"})
    with pytest.raises(intake.IntakeError) as caught:
        _unpack(archive, tmp_path, layout=layout, assignment=A, lms_ids=LMS_IDS,
                notebooks=[NB])
    message = str(caught.value)
    assert says in message and f"member '{member}'" in message
    assert f"not a zip in the {layout} layout ({zips.EXPECTED[layout]})" in message
    assert message.endswith("nothing was unpacked")
    assert _files(tmp_path) == ["x.zip"]


def test_a_missing_zip_is_no_such_file(tmp_path):
    with pytest.raises(intake.IntakeError, match="missing.zip: no such file"):
        _unpack(tmp_path / "missing.zip", tmp_path)


def test_a_resubmission_replaces_only_an_older_one_and_keeps_it_aside(tmp_path):
    sub = tmp_path / "submitted"
    for student, stamp in (("rosa", "2026-12-03 09:00:00.000000 UTC"),
                           ("tess", "2026-12-05 09:00:00.000000 UTC")):
        (sub / student / A).mkdir(parents=True)
        (sub / student / A / NB).write_text(f"{student}'s first")
        (sub / student / A / "timestamp.txt").write_text(stamp)
    (sub / "uma" / A).mkdir(parents=True)
    (sub / "uma" / A / NB).write_text("uma's, by hand")  # no timestamp.txt
    archive = _dated(tmp_path / "again.zip", {f"{s}/{A}/{NB}": f"{s}'s second".encode()
                                              for s in ("rosa", "tess", "uma", "vic")})
    done = _unpack(archive, tmp_path)
    assert done.submissions == 2  # rosa's replaced, vic's new
    assert (sub / "rosa" / A / NB).read_text() == "rosa's second"
    assert (sub / "tess" / A / NB).read_text() == "tess's first"
    assert (sub / "uma" / A / NB).read_text() == "uma's, by hand"
    kept = tmp_path / "replaced" / "rosa" / A / "2026-12-03T090000Z"
    assert (kept / NB).read_text() == "rosa's first"  # never deleted
    assert (kept / "timestamp.txt").is_file()
    assert done.lines == [
        f"replaced rosa/{A} (zip 2026-12-04 10:00 UTC newer than 2026-12-03 09:00 UTC); the "
        f"earlier files are in replaced/rosa/{A}/2026-12-03T090000Z/",
        f"kept tess/{A} (zip 2026-12-04 10:00 UTC not newer than 2026-12-05 09:00 UTC)",
        f"kept uma/{A} (zip 2026-12-04 10:00 UTC; the one in submitted/ has no timestamp.txt, "
        "so the zip is not known to be newer)"]
    # the same zip again: nothing is newer, nothing moves
    again = _unpack(archive, tmp_path)
    assert again.submissions == 0 and all(line.startswith("kept") for line in again.lines)


def test_zip_dates_are_read_in_the_exchange_timezone_or_utc_fields(tmp_path):
    archive = _dated(tmp_path / "a.zip", {f"rosa/{A}/{NB}": b"1", f"rosa/{A}/x.py": b"2"},
                     when=(2026, 12, 4, 10, 0, 0))
    with zipfile.ZipFile(archive, "a") as zf:  # a later member, dated 10:30 local
        zf.writestr(zipfile.ZipInfo(f"rosa/{A}/y.py", date_time=(2026, 12, 4, 10, 30, 0)), "3")
    _unpack(archive, tmp_path, timezone="Europe/Berlin")
    assert (tmp_path / "submitted" / "rosa" / A / "timestamp.txt").read_text() == (
        "2026-12-04 09:30:00.000000 UTC")  # the newest member, Berlin's winter time
    # an extended-timestamp field (0x5455: flags, UTC mtime) is UTC whatever the zone
    info = zipfile.ZipInfo(f"tess/{A}/{NB}", date_time=(1999, 1, 1, 0, 0, 0))
    info.extra = struct.pack("<HHBi", 0x5455, 5, 1, 1_796_378_400)  # 2026-12-04 10:00 UTC
    assert zips.member_time(info, "Europe/Berlin") == datetime(2026, 12, 4, 10, 0)


def test_a_zip_timestamp_txt_is_kept_unless_one_is_given(tmp_path):
    members = {f"rosa/{A}/{NB}": b"1", f"rosa/{A}/timestamp.txt": b"2026-12-01 08:00:00 UTC",
               f"tess/{A}/{NB}": b"2"}
    _unpack(_dated(tmp_path / "a.zip", members), tmp_path)
    sub = tmp_path / "submitted"
    assert (sub / "rosa" / A / "timestamp.txt").read_text() == "2026-12-01 08:00:00 UTC"
    given = zips.given_timestamp("2026-12-04T10:00:00+01:00")
    _unpack(_dated(tmp_path / "b.zip", {f"uma/{A}/{NB}": b"1",
                                        f"uma/{A}/timestamp.txt": b"2026-12-01 08:00:00 UTC"}),
            tmp_path, timestamp=given)
    assert (sub / "uma" / A / "timestamp.txt").read_text() == "2026-12-04 09:00:00.000000 UTC"
    assert zips.given_timestamp("2026-12-04 10:00", "Europe/Berlin") == datetime(
        2026, 12, 4, 9, 0)
    with pytest.raises(intake.IntakeError, match="--timestamp 'yesterday' is not an ISO 8601"):
        zips.given_timestamp("yesterday")
    bad = _dated(tmp_path / "c.zip", {f"vic/{A}/{NB}": b"1", f"vic/{A}/timestamp.txt": b"soon"})
    with pytest.raises(intake.IntakeError, match="'soon' is not a timestamp"):
        _unpack(bad, tmp_path)
    assert not (sub / "vic").exists()


CANVAS_OPTIONS = dict(layout="canvas", assignment=A, lms_ids=LMS_IDS, notebooks=[NB])


def test_an_lms_students_own_timestamp_and_secret_are_never_used(tmp_path):
    """In an LMS download the student chose every file: a timestamp.txt of theirs would pick
    their own submission time, and one of nbgrader's names as a folder would clash."""
    archive = _dated(tmp_path / "c.zip", {
        f"garciarosa_48213_1_{NB}": b"rosa's",
        "garciarosa_48213_2_timestamp.txt": b"2000-01-01 00:00:00 UTC",
        "garciarosa_48213_3_submission_secret.txt": b"mine",
        f"wongtess_48214_4_{NB}": b"tess's"}, when=(2026, 12, 20, 10, 0, 0))
    done = _unpack(archive, tmp_path, **CANVAS_OPTIONS)
    sub = tmp_path / "submitted"
    assert (sub / "rosa" / A / "timestamp.txt").read_text() == "2026-12-20 10:00:00.000000 UTC"
    assert not (sub / "rosa" / A / "submission_secret.txt").exists()
    assert ("left out rosa's timestamp.txt: an LMS download's time comes from the zip's dates "
            "or --timestamp") in done.lines
    assert "left out rosa's submission_secret.txt: nbgrader makes its own" in done.lines
    moodle = _dated(tmp_path / "m.zip", {
        f"Rosa Garcia_48213_assignsubmission_file_/{NB}": b"rosa's",
        "Tess Wong_48214_assignsubmission_file_/timestamp.txt/x": b"{}",
        f"Tess Wong_48214_assignsubmission_file_/{NB}": b"tess's"}, when=(2026, 12, 21, 0, 0, 0))
    done = _unpack(moodle, tmp_path, **dict(CANVAS_OPTIONS, layout="moodle"))
    assert (sub / "tess" / A / "timestamp.txt").is_file()
    assert "left out tess's timestamp.txt/x: timestamp.txt is nbgrader's file, not a folder" in (
        done.lines)
    # the instructor's own zip (course layout) may bring timestamp.txt, never as a folder
    course = _dated(tmp_path / "course.zip", {f"uma/{A}/submission_secret.txt/x": b"1"})
    with pytest.raises(intake.IntakeError, match="under a folder submission_secret.txt/"):
        _unpack(course, tmp_path)
    assert not (sub / "uma").exists()


def _damaged(archive, member: bytes):
    """``archive`` with the data of the member holding ``member`` changed (its CRC fails)."""
    data = archive.read_bytes()
    at = data.index(member)
    archive.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1:])


def test_one_students_upload_never_stops_an_lms_download(tmp_path):
    members = {f"garciarosa_48213_1_{NB}": b"rosa's",
               f"wongtess_48214_2_{NB}": b"tess's first",
               f"wongtess_48214_2_{A}-1.ipynb": b"tess's again",  # attached twice
               "wongtess_48214_2_A.txt": b"upper", "wongtess_48214_3_a.txt": b"lower",
               "wongtess_48214_2_big.bin": b"x" * 5000}
    archive = _dated(tmp_path / "c.zip", members)
    with zipfile.ZipFile(archive, "a") as zf:  # uploaded later: kept over A.txt
        zf.writestr(zipfile.ZipInfo("wongtess_48214_4_A.txt", (2026, 12, 4, 11, 0, 0)),
                    "newest")
    done = zips.unpack_zip(archive, tmp_path / "submitted", 1000, **CANVAS_OPTIONS)
    tess = tmp_path / "submitted" / "tess" / A
    assert (tess / NB).read_bytes() == b"tess's again"
    assert sorted(p.name for p in tess.iterdir()) == [NB, "A.txt", "big.bin", "timestamp.txt"]
    assert (tess / "A.txt").read_bytes() == b"newest"
    big = (tess / "big.bin").stat()
    assert big.st_size == 5000 and big.st_blocks == 0  # a sparse stand-in, nothing read
    assert (tmp_path / "submitted" / "rosa" / A / NB).read_bytes() == b"rosa's"
    said = "\n".join(done.lines)
    assert (f"left out tess's 'wongtess_48214_2_{NB}': the same file as 'wongtess_48214_2_{A}-1"
            ".ipynb', which is newer") in said
    assert "left out tess's 'wongtess_48214_2_A.txt'" in said  # a.txt was kept, then A.txt
    assert "tess's big.bin: 5 kB, more than the limit of 1 kB, not read" in said
    assert done.skipped == [] and done.submissions == 2
    # a member that cannot be read skips its student only, and says so
    broken = _dated(tmp_path / "broken.zip", {f"garciarosa_48213_1_{NB}": b"rosa's second",
                                               f"doejane_48215_9_{NB}": b"jane's only one"})
    _damaged(broken, b"jane's only one")
    done = _unpack(broken, tmp_path / "two", **dict(CANVAS_OPTIONS,
                                                     lms_ids={**LMS_IDS, "48215": "jane"}))
    assert done.skipped == ["jane"] and done.submissions == 1
    assert any(line.startswith(f"skipped jane's {A}: member 'doejane_48215_9_{NB}' is "
                               "damaged (Bad CRC") for line in done.lines)
    assert _files(tmp_path / "two" / "submitted") == [f"rosa/{A}/{NB}",
                                                       f"rosa/{A}/timestamp.txt"]
    # the course layout is the instructor's zip: one student's duplicate still refuses it
    twice = _dated(tmp_path / "twice.zip", {f"rosa/{A}/A.txt": b"1", f"rosa/{A}/a.txt": b"2"})
    with pytest.raises(intake.IntakeError, match="name the same file; nothing was unpacked"):
        _unpack(twice, tmp_path / "three")


ESCAPES = "\x1b]0;owned\x07\x1b[2J.ipynb"


def test_names_from_a_zip_reach_the_terminal_inert(tmp_path, small_course, capsys,
                                                   monkeypatch):
    assert intake.shown(ESCAPES) == ".ipynb" and intake.shown("x" * 100).endswith("x…")
    archive = _dated(tmp_path / "e.zip", {ESCAPES: b"{}"})
    with pytest.raises(intake.IntakeError) as caught:
        _unpack(archive, tmp_path, **CANVAS_OPTIONS)
    assert "member '.ipynb' is not named as Canvas names" in str(caught.value)
    assert "\x1b" not in str(caught.value) and "\x07" not in str(caught.value)
    monkeypatch.chdir(small_course)
    shutil.copy(archive, small_course / f"{ESCAPES}.zip")
    assert cli.main(["grade", A, "--zip", f"{ESCAPES}.zip", "--layout", "canvas"]) == 2
    err = capsys.readouterr().err
    assert "is not named as Canvas names" in err or "lms_user_id" in err
    assert "\x1b" not in err and "\x07" not in err


def test_a_zip_date_that_is_not_a_date_asks_for_timestamp(tmp_path):
    archive = _dated(tmp_path / "d.zip", {f"rosa/{A}/{NB}": b"{}"})
    data = bytearray(archive.read_bytes())
    for signature, at in ((b"PK\x03\x04", 12), (b"PK\x01\x02", 14)):  # month 0, day 0
        struct.pack_into("<H", data, data.find(signature) + at, (2026 - 1980) << 9)
    archive.write_bytes(bytes(data))
    with pytest.raises(intake.IntakeError, match=f"d.zip: member 'rosa/{A}/{NB}' is dated "
                       "2026-00-00 10:00:00, which is not a date; give the submission time "
                       "with --timestamp"):
        _unpack(archive, tmp_path)
    assert not (tmp_path / "submitted" / "rosa").exists()
    given = zips.given_timestamp("2026-12-01T10:00:00+00:00")
    _unpack(archive, tmp_path, timestamp=given)  # the instructor's time: no date needed
    assert (tmp_path / "submitted" / "rosa" / A / "timestamp.txt").read_text().startswith(
        "2026-12-01 10:00:00")


def test_an_unknown_exchange_timezone_is_refused_not_read_as_local_time():
    with pytest.raises(intake.IntakeError, match="'Mars/Olympus' is not a time zone"):
        zips.given_timestamp("2026-12-04 10:00", "Mars/Olympus")


def test_a_timestamp_txt_that_is_a_pipe_is_not_read(tmp_path):
    """Reading a FIFO blocks until someone writes to it: only a regular file is read."""
    import threading

    folder = tmp_path / "rosa" / A
    folder.mkdir(parents=True)
    os.mkfifo(folder / "timestamp.txt")
    found = []
    reader = threading.Thread(target=lambda: found.append(intake.existing_time(folder)),
                              daemon=True)
    reader.start()
    reader.join(60)  # a guard against a hang, not a measure: it returns at once
    assert found == [None]
    (tmp_path / "tess").mkdir()
    (tmp_path / "tess" / "timestamp.txt").write_text("2026-12-05 09:00:00 UTC" + " " * 500)
    assert intake.existing_time(tmp_path / "tess") == datetime(2026, 12, 5, 9, 0)


def test_the_summary_says_how_late_in_words():
    from autograd_course.grading import runner

    assert runner.late_by(666000) == "7 d 17 h late (666000 s)"
    assert runner.late_by(90) == "1 min 30 s late (90 s)"
    assert runner.late_by(42.5) == "42.5 s late"


def test_a_notebook_under_another_name_is_named():
    assert intake.misnamed(["Untitled.ipynb", "timestamp.txt"], [NB]) == ["Untitled.ipynb"]
    assert intake.misnamed([NB, "Untitled.ipynb"], [NB]) == []  # nbgrader grades NB
    assert intake.misnamed(["sub/x.ipynb"], [NB]) == []  # nbgrader looks at the top only


# -- through the command line ----------------------------------------------------------------
@pytest.fixture
def small_course(tmp_path, root):
    """A course root with 01_gradients' source and two submissions, nothing graded."""
    shutil.copy2(root / "nbgrader_config.py", tmp_path)
    shutil.copytree(root / "source" / A, tmp_path / "source" / A)
    for student in ("rosa", "tess"):
        (tmp_path / "submitted" / student / A).mkdir(parents=True)
    (tmp_path / "submitted" / "rosa" / A / "Untitled.ipynb").write_text("{}")
    (tmp_path / "submitted" / "tess" / A / NB).write_text("{}")
    return tmp_path


def test_grade_names_unknown_students_wrong_case_and_a_missing_zip(small_course):
    result = run("grade", A, "--student", "rosa", "--student", "tes", cwd=small_course)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (f"no submission of {A} for --student tes (no folder submitted/tes/{A}/); nothing "
            "was graded") in result.stderr
    missing = run("grade", A, "--zip", "nowhere.zip", cwd=small_course)
    assert missing.returncode == 2 and "nowhere.zip: no such file" in missing.stderr
    loose = run("grade", A, "--layout", "canvas", cwd=small_course)
    assert loose.returncode == 2 and "--timestamp and --layout go with --zip" in loose.stderr
    (small_course / "submitted" / "uma" / "01_Gradients").mkdir(parents=True)
    course = Course.load(small_course)
    problems = []
    found = course.submissions([A], [], problems)
    assert [s.student for s in found] == ["rosa", "tess"]
    assert problems == [f"{small_course / 'submitted' / 'uma' / '01_Gradients'}: the "
                        f"assignment is spelled {A} (not '01_Gradients'); not graded until "
                        "the folder is renamed"]


def test_grade_takes_a_canvas_zip_through_the_roster(small_course):
    (small_course / "roster.csv").write_text("id,first_name,lms_user_id\nvic,Vic,48215\n")
    archive = _dated(small_course / "canvas.zip", {f"lovelacevic_48215_77_{NB}": b"{}"})
    both = run("grade", "--zip", str(archive), "--layout", "canvas", cwd=small_course)
    assert both.returncode == 2 and "--layout canvas: name exactly one ASSIGNMENT" in (
        both.stderr)
    unknown = _dated(small_course / "other.zip", {f"doejane_50000_78_{NB}": b"{}"})
    refused = run("grade", A, "--zip", str(unknown), "--layout", "canvas", cwd=small_course)
    assert refused.returncode == 2 and "Canvas id 50000 is not in the roster" in refused.stderr
    assert not (small_course / "submitted" / "vic").exists()
    # unpacked (the grading that follows fails for the empty notebooks: not looked at here)
    course = Course.load(small_course)
    cli.unpack_zip(course, cli.build_parser().parse_args(
        ["grade", A, "--zip", str(archive), "--layout", "canvas"]))
    assert (small_course / "submitted" / "vic" / A / NB).read_bytes() == b"{}"


def test_results_that_cannot_be_merged_fail_one_student_not_the_class(small_course,
                                                                      monkeypatch):
    """A student's folder named as nbgrader's file (submitted/rosa/A/timestamp.txt/x) made
    results whose files clash: the merge raised out of grade_class, for the class, each run."""
    from autograd_course.grading import feedback, gradebook, runner, tasks

    course = Course.load(small_course)
    with course.gradebook() as gb:
        gb.update_or_create_assignment(A)

    def graded(todo, bundle, jobs, budgets):
        for task in todo:
            clash = {"timestamp.txt": b"x", "timestamp.txt/x": b"y"}
            yield tasks.Outcome(task.submission, True, task.digest,
                                autograded=clash if task.submission.student == "rosa" else {})

    monkeypatch.setattr(runner, "bundle_for", lambda *args: None)
    monkeypatch.setattr(runner, "budgets_of", lambda *args: {})
    monkeypatch.setattr(runner, "_on_this_machine", graded)
    summary = runner.grade_class(course, course.submissions([A], []))
    rosa, tess = summary.outcomes
    assert not rosa.ok and rosa.error.startswith("its results could not be merged: ")
    assert tess.ok and set(gradebook.graded(course, A)) == {"rosa", "tess"}
    # the worker leaves such a folder out of what it sends; nbgrader's files are not doubled
    made = feedback.nbgrader_files({"timestamp.txt/x": b""}, "s", "rosa", A, None)
    assert list(made) == [feedback.SECRET_FILE]


def test_make_task_renames_only_in_the_task_and_names_the_notebook(small_course):
    from autograd_course.grading import tasks
    from autograd_course.grading.course import Submission

    course = Course.load(small_course)
    rosa = Submission("rosa", A)
    before = sorted(p.name for p in (small_course / "submitted" / "rosa" / A).iterdir())
    plain = tasks.make_task(course, rosa)
    assert plain.misnamed == f"rosa submitted Untitled.ipynb; the assignment's notebook is {NB}"
    assert list(plain.files) == ["Untitled.ipynb"] and plain.renamed is None
    renamed = tasks.make_task(course, rosa, rename=True)
    assert list(renamed.files) == [NB] and renamed.renamed == ("Untitled.ipynb", NB)
    assert renamed.misnamed == "" and renamed.digest != plain.digest
    assert sorted(p.name for p in (small_course / "submitted" / "rosa" / A).iterdir()) == before
    # a due date counts in what decides "unchanged"; none gives the digest of the files alone
    dated = tasks.make_task(course, rosa, {rosa: ("2026-12-01T12:00:00", None, None)})
    extended = tasks.make_task(course, rosa, {rosa: ("2026-12-01T12:00:00", 3600.0, None)})
    assert len({plain.digest, dated.digest, extended.digest}) == 3
    assert plain.digest == tasks.digest_of(plain.files)
    assert (dated.duedate, extended.extension) == ("2026-12-01T12:00:00", 3600.0)


@pytest.mark.class_grading
def test_a_misnamed_notebook_gets_nbgraders_score_and_a_plain_reason(tmp_path, root):
    """nbgrader skips Untitled.ipynb ("Skipping unknown notebook") and grades nothing; the
    course gives the same score with the reason in plain words, or, with --rename-notebook,
    grades it under the expected name."""
    from autograd_course.testkit import classes

    plain = classes.make_course(tmp_path / "plain", root, [A])
    answers = classes.reference_answers(plain / "source" / A / NB)
    nb = classes.fill(plain / "release" / A / NB, answers)
    classes.submit(plain, "rosa", A, "Untitled", nb)
    classes.submit(plain, "tess", A, A, nb)
    ours = classes.copy_course(plain, tmp_path / "ours")
    shutil.copy2(plain / "gradebook.db", ours / "gradebook.db")
    said = classes.nbgrader(plain, "autograde", A, "--force")
    assert "Skipping unknown notebook" in said.stdout + said.stderr
    result = run("grade", A, "--jobs", "2", cwd=ours)
    assert result.returncode == 0, result.stderr[-2000:]
    expected = f"rosa submitted Untitled.ipynb; the assignment's notebook is {NB}"
    assert f"WARNING: {expected} (not graded" in result.stderr
    assert f"  FAILED  rosa/{A}: {expected}" in result.stdout
    assert "Please see the" not in result.stdout
    scores = classes.gradebook_scores(ours, A)
    assert scores == classes.gradebook_scores(plain, A) and scores["rosa"] == 0
    assert classes.grade_record(ours, "rosa", A).failure == expected
    renamed = run("grade", A, "--rename-notebook", cwd=ours)
    assert renamed.returncode == 0, renamed.stderr[-2000:]
    assert f"rosa/{A}: Untitled.ipynb is graded as {NB} (--rename-notebook" in renamed.stderr
    assert classes.gradebook_scores(ours, A)["rosa"] == scores["tess"] > 0
    assert sorted(p.name for p in (ours / "submitted" / "rosa" / A).iterdir()) == [
        "Untitled.ipynb", "timestamp.txt"]
