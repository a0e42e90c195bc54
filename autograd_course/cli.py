"""The ``autograd-course`` command line: one command per job of the course.

    autograd-course release ASSIGNMENT... | --all [--force]   student versions, gradebook,
                                                        exchange
    autograd-course grade [ASSIGNMENT...] [--jobs N | --scheduler ADDRESS] [--student ID...]
                          [--zip FILE [--layout course|canvas|moodle] [--timestamp ISO]]
                          [--rename-notebook] [--force] [--require-sandbox]
    autograd-course start ASSIGNMENT                     a learner's working copy, in work/
    autograd-course check NOTEBOOK... [--student ID] [--cold]   a learner's self-check
    autograd-course validate NOTEBOOK...                 the visible tests, one line each
    autograd-course demo [--assignment A] [--out DIR] [--jobs N]   a dry run, synthetic class
    autograd-course feedback [ASSIGNMENT...] [--student ID...]   pages the gradebook changed
    autograd-course export [--format nbgrader|canvas] [--to FILE] [ASSIGNMENT...]   grades

Run it from the course root (or pass ``--course DIR``). Everything follows the course's
nbgrader configuration (:class:`~autograd_course.grading.course.Course`): its directories and
its gradebook, SQLite or a server. Bad arguments and missing course pieces get one clear line
on stderr and exit status 2; problems of single submissions are reported in the summary and
never change the exit status. ``grade`` with nothing changed since its last run says so from
that run's stamp (:mod:`.grading.idle`), and ``--help`` too imports nothing it does not use.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograd_course import CHECKED_FROM, __version__
from autograd_course.grading.course import Course, CourseError
from autograd_course.grading.terminal import safe


# -- helpers ----------------------------------------------------------------------------
class Progress:
    """The grading progress bar (tqdm, on stderr): done/total, elapsed, ETA, the last one.
    While it is shown, a message goes through :meth:`write` (tqdm takes the bar off its line,
    writes the message, and draws the bar again), never onto the bar's line; :meth:`close`
    ends it on a line of its own (the run stopped, or nothing was left to grade)."""

    def __init__(self, total: int):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc="grading", unit="submission", file=sys.stderr,
                        dynamic_ncols=True)

    def write(self, line: str, file=None) -> None:
        """Print ``line`` (to stdout by default) on a line of its own, above the bar."""
        self.bar.write(line, file=file or sys.stdout)

    def close(self) -> None:
        self.bar.close()  # a second close does nothing

    def __call__(self, outcome, done: int, total: int) -> None:
        if self.bar.total != total:  # the unchanged graded submissions were skipped
            self.bar.total = total
        submission = outcome.submission
        self.bar.set_postfix_str(f"last: {submission.student}/{submission.assignment}",
                                 refresh=False)
        self.bar.update(1)
        if done == total:
            self.bar.close()


def unpack_zip(course: Course, args) -> list[str]:
    """Add the submissions of ``args.zip`` to submitted/ (:func:`.zips.unpack_zip`) in the
    layout ``args.layout``, with ``args.timestamp`` if given, and say what it did: every
    member is checked before anything is written, an LMS download's ids are mapped through
    the roster's ``lms_user_id``, and a submission already there is replaced only by a newer
    one (the earlier one moved to replaced/). Return the students of an LMS download whose
    submission was skipped (a member that could not be read): ``grade`` grades the others,
    then exits with status 1, naming them."""
    from nbgrader.coursedir import CourseDirectory

    from autograd_course.grading import intake, roster, zips

    archive = Path(args.zip)
    limit = int(CourseDirectory(config=course.config).max_file_size) * 1000
    timezone = course.config.Exchange.get("timezone") or "UTC"
    options = {"layout": args.layout, "assignments": course.assignments(),
               "timezone": timezone}
    try:
        if args.timestamp:
            options["timestamp"] = zips.given_timestamp(args.timestamp, timezone)
        if args.layout != "course":
            if len(args.assignments) != 1:
                raise CourseError(f"--layout {args.layout}: name exactly one ASSIGNMENT (an "
                                  "LMS download holds one assignment)")
            found = roster.load(course)
            ids = {} if found is None else {
                values["lms_user_id"]: student for student, values in found.students.items()
                if values.get("lms_user_id")}
            if not ids:
                raise CourseError(f"--layout {args.layout}: {roster.path_of(course)} must map "
                                  "the LMS's ids to student ids (a column lms_user_id)")
            options.update(assignment=args.assignments[0], lms_ids=ids,
                           notebooks=course.notebooks_of(args.assignments[0]))
        done = zips.unpack_zip(archive, course.directory("submitted"), limit, **options)
    except intake.IntakeError as exc:
        raise CourseError(str(exc)) from None
    for line in done.lines:
        print(safe(line))
    print(f"added {done.added} files ({done.submissions} submissions) from {safe(str(archive))}"
          " to submitted/")
    return done.skipped


def misnamed_lines(course: Course, submissions, rename: bool) -> list[str]:
    """A line for each submission whose folder has no notebook of the assignment's name."""
    from autograd_course.grading import intake

    lines = []
    for s in submissions:
        folder = course.directory("submitted", s.student, s.assignment)
        notebooks = course.notebooks_of(s.assignment)
        wrong = intake.misnamed([p.name for p in folder.iterdir()], notebooks)
        if not wrong:
            continue
        if rename and len(notebooks) == 1 and len(list(folder.rglob("*.ipynb"))) == 1:
            lines.append(f"{s.student}/{s.assignment}: {intake.shown(wrong[0])} is graded as "
                         f"{notebooks[0]} (--rename-notebook; the file is not changed)")
        else:
            lines.append(f"{intake.misnamed_said(s.student, wrong, notebooks)} (not graded: 0, "
                         "as nbgrader gives; --rename-notebook grades a folder's only notebook "
                         "under that name)")
    return lines


# -- commands ---------------------------------------------------------------------------
def cmd_release(args) -> int:
    from autograd_course.grading.release import ReleaseError, outbound, release

    course = Course.load(args.course)
    if bool(args.assignments) == bool(args.all):
        raise CourseError("name the assignments to release (e.g. `autograd-course release "
                          "01_gradients`), or --all for every unit of source/, not both")
    try:
        done = release(course, args.assignments, force=args.force)
    except ReleaseError as exc:
        raise CourseError(str(exc)) from None
    for name, what in done.items():
        where = outbound(course, name)
        if what == "kept":
            print(f"{name} is already released ({where}): kept as it is (--force releases it "
                  "again; students who fetched it keep their copy)")
        else:
            print(f"{what} {name}: release/{name}/, the gradebook and the exchange ({where})")
    return 0


def refresh_feedback(course: Course, names: list[str], students: list[str]) -> int:
    """Make again the feedback pages whose grades or comments changed in the gradebook
    (:func:`.feedback.refresh`), say which; return how many could not be made."""
    from autograd_course.grading import feedback

    done = feedback.refresh(course, names, students or None)
    if done.made:
        print(f"feedback made again from the gradebook for {len(done.made)} submissions "
              "(grades or comments changed): "
              + ", ".join(safe(f"{student}/{name}") for name, student in done.made))
    for name, student, why in done.failed:
        print(f"PROBLEM {safe(student)}/{name}: its feedback could not be made: {safe(why)}",
              file=sys.stderr)
    return len(done.failed)


def cmd_feedback(args) -> int:
    from autograd_course.grading import gradebook

    course = Course.load(args.course)
    names = course.check_assignments(args.assignments)
    with gradebook.exclusive(course, lambda: print("another grading run holds this "
                                                   "gradebook: waiting for it...", flush=True)):
        failed = refresh_feedback(course, names, args.student)
    print(f"feedback: {course.directory('feedback')} is up to date with the gradebook"
          if not failed else f"feedback: {failed} pages could not be made")
    return 1 if failed else 0


def cmd_export(args) -> int:
    from autograd_course.grading import export

    course = Course.load(args.course)
    default = "grades.csv" if args.format == "nbgrader" else "canvas_grades.csv"
    dest = Path(args.to) if args.to else course.root / default
    try:
        export.export(course, dest, args.format, args.assignments)
    except (ValueError, OSError) as exc:
        raise CourseError(str(exc)) from None
    print(f"wrote {dest.resolve()} ({args.format} format)")
    return 0


def cmd_grade(args) -> int:
    from autograd_course.grading import idle

    if args.jobs < 1:
        raise CourseError(f"--jobs must be at least 1 (got {args.jobs})")
    if (args.timestamp or args.layout != "course") and not args.zip:
        raise CourseError("--timestamp and --layout go with --zip FILE")
    stamp = idle.Stamp(args.course, {"assignments": args.assignments, "students": args.student,
                                     "rename_notebook": args.rename_notebook})
    kept = None if args.force or args.zip else stamp.last()
    if kept is None:
        return grade_in_full(args, stamp)
    if args.require_sandbox:
        require_sandbox()
    say_unchanged(kept)
    return 0


def require_sandbox() -> None:
    """``--require-sandbox``: refuse to go on where bubblewrap cannot run."""
    from autograd_course.grading.boundary import sandbox

    if sandbox.bubblewrap() is None:
        raise CourseError("--require-sandbox: bubblewrap (bwrap) is missing or cannot "
                          "create namespaces here; nothing was graded")


def say_unchanged(said: dict) -> None:
    """What ``grade`` says when nothing changed since the last run (:mod:`.idle`): that run's
    warnings and closing lines, which still hold."""
    for line in said["warnings"]:
        print(f"WARNING: {safe(line)}", file=sys.stderr)
    print(f"{said['submissions']} submissions were graded before and have not changed: kept "
          "(--force grades them again)")
    print("nothing else changed since the last run: its feedback, grades.csv and class "
          "reports stand")
    for line in said["lines"]:
        print(safe(line, lines=True))


def grade_in_full(args, stamp) -> int:
    """``grade`` deciding submission by submission (:func:`.runner.grade_class`), then the
    feedback, grades.csv and the class reports; ``stamp`` (:class:`.idle.Stamp`) is taken as
    the run goes and left when it ends well."""
    from autograd_course.grading import bounded, tasks

    if not args.scheduler:  # the grading children's imports, while nbgrader's are made here
        bounded.start_early(bounded.context(tasks.PRELOAD))
    from autograd_course.grading import gradebook, runner

    settings = {"require_sandbox": True} if args.require_sandbox else {}
    course = Course.load(args.course)
    stamp.inputs(course)
    names = course.check_assignments(args.assignments)
    if args.require_sandbox:
        require_sandbox()
    not_unpacked = unpack_zip(course, args) if args.zip else []
    unknown = course.unknown_students(names, args.student)
    if unknown:
        raise CourseError(f"no submission of {', '.join(names)} for --student "
                          f"{', '.join(safe(s) for s in unknown)} (no folder submitted/"
                          f"{safe(unknown[0])}/{names[0]}/); nothing was graded")
    warned: list[str] = []
    submissions = course.submissions(names, args.student, warned)
    warned += misnamed_lines(course, submissions, args.rename_notebook)
    for line in warned:
        print(f"WARNING: {safe(line)}", file=sys.stderr)
    if not submissions:
        who = f" for {', '.join(args.student)}" if args.student else ""
        raise CourseError(f"no submissions under {course.directory('submitted')} for "
                          f"{', '.join(names)}{who} (expected submitted/STUDENT/ASSIGNMENT/)")
    where = f"on the Dask cluster {args.scheduler}" if args.scheduler else (
        f"with {args.jobs} parallel jobs")
    print(f"grading {len(submissions)} submissions of {', '.join(names)} {where}", flush=True)
    # The report needs matplotlib: import it while the workers grade, not after.
    report_import = ThreadPoolExecutor(max_workers=1).submit(
        importlib.import_module, "autograd_course.grading.report")
    progress = Progress(len(submissions))
    reports: dict[str, tuple[dict, list[str]]] = {}  # assignment -> its report's paths, notes

    def write_report(name: str) -> None:
        # as soon as an assignment's last submission is merged: its class's records are final
        records, skipped = runner.records_of(course, runner.class_of(course, name))
        reports[name] = (report_import.result().write_report(
            records, course.root / "reports" / name, title=f"Class report: {name}"), skipped)

    def report_now(name: str) -> None:
        try:
            write_report(name)
        except Exception:  # noqa: BLE001 - written again below, where its error stops the run
            reports.pop(name, None)

    try:
        summary = runner.grade_class(
            course, submissions, jobs=args.jobs, scheduler=args.scheduler, force=args.force,
            on_done=progress, settings=settings,
            rename_notebook=args.rename_notebook, on_merged=lambda: stamp.graded(course),
            on_wait=lambda: progress.write("another grading run holds this gradebook: "
                                           "waiting for it to finish..."),
            on_assignment=report_now)
    finally:
        progress.close()
        bounded.stop_early()  # started above, and not used: nothing was graded
    if not summary.settled:  # the gradebook moved while this run graded
        stamp.drop()
    warned += summary.warnings
    if summary.skipped:
        print(f"{len(summary.skipped)} submissions were graded before and have not changed: "
              "kept (--force grades them again)")
    failed = refresh_feedback(course, names, args.student)
    gradebook.export_grades(course, course.root / "grades.csv")
    closing, written = [], [course.root / "grades.csv"]
    for name in names:
        if name not in reports:  # nothing of it graded in this run
            write_report(name)
        paths, skipped = reports[name]
        for line in skipped:
            print(f"WARNING: {safe(line)}", file=sys.stderr)
        warned += skipped
        written += paths.values()
        closing.append(f"class report {name}: {paths['html']} (also {paths['csv'].name}, "
                       f"{paths['png'].name})")
        print(closing[-1])
    closing.append(f"grades: {course.root / 'grades.csv'}; feedback: "
                   f"{course.directory('feedback')}")
    print(closing[-1])
    summarise(summary.outcomes, runner.records_of(course, [o.submission
                                                           for o in summary.outcomes])[0])
    stamp.outputs(written)
    if not_unpacked:  # the zip's lines said why
        print(f"autograd-course grade: not unpacked from {safe(args.zip)}, so not graded: "
              f"{', '.join(not_unpacked)}", file=sys.stderr)
        return 1
    if not failed and not args.zip:
        stamp.leave({"submissions": len(submissions), "warnings": [safe(w) for w in warned],
                     "lines": closing + runner.summary_lines([], [])})
    return 0


def summarise(outcomes, records) -> None:
    """Print the failed, flagged, unsandboxed and troubled submissions of this run
    (:func:`.runner.summary_lines`)."""
    from autograd_course.grading import runner

    for line in runner.summary_lines(outcomes, records):
        print(line)


def check_notebook(root: Path, notebook: Path, student: str | None = None):
    """Grade one notebook as the instructor's autograde would; return its grade records."""
    from autograd_course.grading import selfcheck

    Course.load(root).check_assignments([notebook.stem])
    try:
        return selfcheck.check(root, notebook, student)
    except RuntimeError as exc:
        raise CourseError(f"{notebook} could not be graded: {exc}") from None


#: What ``check`` says of where the student id came from (:func:`.selfcheck.student_and_origin`).
STUDENT_ORIGIN = {
    "given": "given with --student",
    "path": "read from the notebook's path, submitted/{student}/...",
    "jupyterhub": "your JupyterHub user name; set it with --student",
    "user": "your user name; set it with --student",
}
#: The same, said in JupyterLab, where the learner gives no option to ``check``.
STUDENT_ORIGIN_IN_LAB = STUDENT_ORIGIN | {
    "jupyterhub": "your JupyterHub user name; the hidden inputs are drawn for it, as in grading",
    "user": "your user name; the hidden inputs are drawn for it, as in grading",
}


def shown_path(name: str) -> str:
    """A notebook's path as the learner gave it; an absolute one inside the current folder
    relative to it."""
    path = Path(name)
    if path.is_absolute():
        try:
            return str(path.resolve().relative_to(Path.cwd().resolve()))
        except (ValueError, OSError):
            return name
    return name


def notebooks_of(names: list[str]) -> list[Path]:
    """The notebooks named on the command line, each checked to be one."""
    for name in names:
        notebook = Path(name)
        if not notebook.is_file():
            raise CourseError(f"{notebook}: no such file")
        if notebook.suffix != ".ipynb":
            raise CourseError(f"{notebook}: not a notebook (expected NN_topic.ipynb)")
    return [Path(name) for name in names]


def student_lines(notebook: Path, student: str | None,
                  environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """The student id ``notebook`` is checked as, and ``check``'s line saying where it came
    from (:func:`.selfcheck.student_and_origin`, in ``environ``)."""
    from autograd_course.grading import selfcheck

    found, origin = selfcheck.student_and_origin(notebook, student, environ)
    origins = STUDENT_ORIGIN_IN_LAB if environ.get(CHECKED_FROM) else STUDENT_ORIGIN
    return found, selfcheck.wrapped(
        f"  student id: {safe(found)} ({origins[origin].format(student=safe(found))})")


def verdict_lines(root: Path, notebook: Path, student: str) -> tuple[list[str], str | None]:
    """``check``'s report of ``notebook`` graded as ``student``; or the line saying why it
    could not be graded, with that reason's line on stderr (else None)."""
    from autograd_course.grading import selfcheck

    try:  # one notebook's failure is its own: the next one is checked
        records = check_notebook(root, notebook.resolve(), student)
    except CourseError as exc:
        return (selfcheck.wrapped(f"  FAILED {safe(str(exc))}"),
                f"autograd-course check: {safe(str(exc))}")
    return selfcheck.result_lines(records, notebook.stem), None


def check_lines(root: Path, notebook: Path, student: str | None,
                environ: Mapping[str, str]) -> tuple[list[str], str | None]:
    """What ``check`` prints of ``notebook`` after its path (:func:`student_lines`, then
    :func:`verdict_lines`), and its line on stderr or None: what the warm check's service
    answers (:mod:`.grading.checkserver`)."""
    found, said = student_lines(notebook, student, environ)
    lines, error = verdict_lines(root, notebook, found)
    return said + lines, error


def _ready_to_check_here(args, notebooks: int) -> Path:
    """Get this process ready to check ``notebooks`` notebooks itself (cold); the course
    root."""
    from autograd_course.grading.boundary import warm

    root = Course.load(args.course).root
    warm.plan(notebooks)  # warm kernels from the second notebook on; none for one
    return root


def cmd_check(args) -> int:
    from autograd_course import warmcheck

    notebooks = notebooks_of(args.notebooks)
    environ = dict(os.environ) | ({warmcheck.SWITCH: "0"} if args.cold else {})
    root = Path(args.course).resolve()
    # JupyterLab's warm check answers while it is there; else this process checks
    asking = warmcheck.reachable(root, environ)
    if not asking:
        root = _ready_to_check_here(args, len(notebooks))
    failed = 0
    for name, notebook in zip(args.notebooks, notebooks, strict=True):
        print(safe(shown_path(name)), flush=True)
        answer = warmcheck.ask(root, notebook, args.student, environ) if asking else None
        if answer is None:
            if asking:
                root, asking = _ready_to_check_here(args, len(notebooks)), False
            student, said = student_lines(notebook, args.student, environ)
            print("\n".join(said), flush=True)
            lines, error = verdict_lines(root, notebook, student)
        else:
            lines, error = answer["lines"], answer["error"]
        print("\n".join(lines), flush=True)
        if error:
            failed += 1
            print(error, file=sys.stderr)
    return 2 if failed else 0


#: Where ``start`` puts a learner's working copies, under the course root (git-ignored).
WORK = "work"


def assignment_named(course: Course, name: str) -> str:
    """The assignment ``name`` stands for: its full name (``01_gradients``), or its number
    (``01``)."""
    known = course.assignments()
    if name in known:
        return name
    numbered = [a for a in known if a.split("_", 1)[0] == name]
    if len(numbered) == 1:
        return numbered[0]
    raise CourseError(f"no assignment '{name}' in {course.directory('source')} "
                      f"(known: {', '.join(known)})")


def _folder_below(parent: int, name: str, shown: Path) -> int:
    """A descriptor of the folder ``name`` in the folder open as ``parent``, made if missing;
    a symbolic link there (or anything but a folder) is refused, never followed."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, dir_fd=parent)
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except OSError:
        raise CourseError(f"{shown} is a symbolic link or no folder: start writes only into "
                          f"folders of its own under {WORK}/ (move it away, then run this "
                          "again)") from None


def _write_new(folder: int, name: str, data: bytes) -> bool:
    """Write ``data`` into a new file ``name`` of the folder open as ``folder``, made
    exclusively and following no link; False when something is there already."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666,
                     dir_fd=folder)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as file:
        file.write(data)
    return True


def cmd_start(args) -> int:
    course = Course.load(args.course)
    name = assignment_named(course, args.assignment)
    released = course.directory("release", assignment=name)
    if not (released / f"{name}.ipynb").is_file():
        raise CourseError(f"{released / f'{name}.ipynb'} is missing: make the student "
                          f"versions first (autograd-course release {name})")
    shown = Path(WORK) / name / f"{name}.ipynb"
    # every step below the course root by descriptor, following no link: nothing is written
    # outside root/work/NAME/, whatever links a learner (or anyone) left there
    root = os.open(course.root, os.O_RDONLY | os.O_DIRECTORY)
    opened = [root]
    try:
        opened.append(_folder_below(root, WORK, Path(WORK)))
        folder = _folder_below(opened[-1], name, Path(WORK) / name)
        opened.append(folder)
        try:
            there = os.lstat(shown.name, dir_fd=folder)
        except FileNotFoundError:
            there = None
        if there is not None and stat.S_ISLNK(there.st_mode):
            raise CourseError(f"{shown} is a symbolic link: start writes only files of its "
                              "own (delete the link, then run this again)")
        if there is not None:
            print(f"{shown} is there already: it is your copy, open it (nothing was copied; "
                  "to start again from the blank assignment, rename or delete it first, then "
                  "run this again).")
            return 0
        copied = []
        # the notebook first: it makes the copy; then any file that comes with it
        for path in sorted(released.iterdir(), key=lambda p: (p.name != shown.name, p.name)):
            if path.is_file() and _write_new(folder, path.name, path.read_bytes()):
                copied.append(path.name)
            elif path.name == shown.name:  # made meanwhile: it is not ours to replace
                raise CourseError(f"{shown} appeared while it was copied: nothing replaced it")
    finally:
        for fd in reversed(opened):
            os.close(fd)
    try:
        origin = released.relative_to(course.root)
    except ValueError:  # a release folder the config puts elsewhere
        origin = released
    print(f"Copied {origin}/ to {shown.parent}/ ({', '.join(copied)}): "
          "your own copy of the assignment, which git ignores.")
    print(f"Open {shown} in JupyterLab (its file browser starts at the course root) and work "
          "there; its last cell and nbgrader's Validate button check it with the hidden tests.")
    return 0


def cmd_validate(args) -> int:
    from autograd_course.grading import selfcheck

    notebooks = notebooks_of(args.notebooks)
    course = Course.load(args.course)
    for name, notebook in zip(args.notebooks, notebooks, strict=True):
        print(safe(shown_path(name)))
        for line in selfcheck.validate(course, notebook.resolve()):
            print(f"  {safe(line)}")
    return 0


def cmd_demo(args) -> int:
    from autograd_course.testkit import synthetic
    from autograd_course.testkit.classes import make_course, submit, submit_class

    course = Course.load(args.course)
    assignment = course.check_assignments([args.assignment])[0]
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="autograd-course-demo-"))
    if out.exists() and any(out.iterdir()):
        raise CourseError(f"{out} is not empty; give --out a new folder")
    make_course(out, course.root, [assignment])
    submit_class(out, assignment, synthetic.DEMO_CLASS)
    submit(out, "gauss", assignment, assignment, b"{ this upload is not a notebook")
    print(f"demo course in {out}: {len(synthetic.DEMO_CLASS) + 1} synthetic students "
          f"({', '.join(f'{s} ({p})' for s, p in synthetic.DEMO_CLASS)}, gauss (not a "
          "notebook))")
    args.course, args.assignments, args.student, args.zip = str(out), [assignment], [], None
    args.scheduler, args.force, args.require_sandbox = None, False, False
    args.layout, args.timestamp, args.rename_notebook = "course", None, False
    return cmd_grade(args)


def intake_layouts() -> tuple[str, ...]:
    """The zip layouts ``--layout`` takes (:data:`.zips.LAYOUTS`)."""
    from autograd_course.grading.zips import LAYOUTS

    return LAYOUTS


# -- parser -----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of ``autograd-course``."""
    parser = argparse.ArgumentParser(
        prog="autograd-course",
        description="An auto-graded Jupyter course on PyTorch's automatic differentiation.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--course", default=".", metavar="DIR",
                        help="the course root (default: the current directory)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = commands.add_parser("release", help="generate the student versions, register them in "
                            "the gradebook and release them to the exchange")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    p.add_argument("--all", action="store_true", help="every unit of source/")
    p.add_argument("--force", action="store_true",
                   help="release again an assignment already in the exchange")
    p.set_defaults(run=cmd_release)

    p = commands.add_parser("grade", help="autograde submitted/, feedback, grades.csv, report")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all units")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                   help="parallel grading jobs (default: the number of cores)")
    p.add_argument("--student", action="append", default=[], metavar="ID",
                   help="grade only this student (repeatable)")
    p.add_argument("--zip", metavar="FILE",
                   help="first add the submissions of a zip (see --layout); one already in "
                        "submitted/ is replaced only by a newer one (moved to replaced/)")
    p.add_argument("--layout", choices=intake_layouts(), default="course",
                   help="the zip's layout: course = [submitted/]STUDENT/ASSIGNMENT/FILE "
                        "(default); canvas, moodle = that LMS's submissions download, of the "
                        "one ASSIGNMENT named, its ids mapped by roster.csv's lms_user_id")
    p.add_argument("--timestamp", metavar="ISO",
                   help="the submission time of every submission of the zip (e.g. "
                        "2026-12-04T10:00:00+01:00), over the zip's own dates")
    p.add_argument("--rename-notebook", action="store_true",
                   help="grade a folder's only notebook under the assignment's notebook name "
                        "when it has another (Untitled.ipynb); the file is not changed")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="grade on this Dask cluster (tcp://host:8786) instead of local processes")
    p.add_argument("--force", action="store_true",
                   help="grade again the submissions graded before whose files have not changed")
    p.add_argument("--require-sandbox", action="store_true",
                   help="refuse to grade unless the student's kernel runs in bubblewrap")
    p.set_defaults(run=cmd_grade)

    p = commands.add_parser("start", help="copy an assignment's student version into work/, "
                            "a working copy of your own (an existing copy is never replaced)")
    p.add_argument("assignment", metavar="ASSIGNMENT",
                   help="e.g. 01_gradients (or its number, 01)")
    p.set_defaults(run=cmd_start)

    p = commands.add_parser("check", help="self-check notebooks against the hidden tests")
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK",
                   help="e.g. release/01_gradients/01_gradients.ipynb")
    p.add_argument("--student", metavar="ID",
                   help="check as this student (default: submitted/ID/... in the path, else "
                        "your user name): the hidden inputs depend on it, as in grading")
    p.add_argument("--cold", action="store_true",
                   help="check in this process, even where JupyterLab keeps a warm check "
                        "ready for the course (the same verdict, slower)")
    p.set_defaults(run=cmd_check)

    p = commands.add_parser(
        "validate", help="run the visible tests of notebooks, as nbgrader validate does, and "
        "say in one line what each failing question needs")
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK",
                   help="e.g. release/01_gradients/01_gradients.ipynb")
    p.set_defaults(run=cmd_validate)

    p = commands.add_parser("feedback", help="make again the feedback pages whose grades or "
                            "comments changed in the gradebook (manual grading)")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all units")
    p.add_argument("--student", action="append", default=[], metavar="ID",
                   help="only this student (repeatable)")
    p.set_defaults(run=cmd_feedback)

    p = commands.add_parser("export", help="write the gradebook's grades as CSV")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                   help="default: every assignment of the gradebook")
    p.add_argument("--format", choices=["nbgrader", "canvas"], default="nbgrader",
                   help="nbgrader's grades.csv (default) or Canvas's gradebook import")
    p.add_argument("--to", metavar="FILE",
                   help="default: grades.csv (nbgrader) or canvas_grades.csv (canvas)")
    p.set_defaults(run=cmd_export)

    p = commands.add_parser("demo", help="grade a synthetic class end to end (a dry run)")
    p.add_argument("--assignment", default="01_gradients", help="default: 01_gradients")
    p.add_argument("--out", metavar="DIR", help="where to build the demo course (a new folder)")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    p.set_defaults(run=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # each line out at once, also into a pipe: a message and the progress bar (on stderr)
    # then reach a log, or a terminal shared with stderr, in the order they were written
    with contextlib.suppress(AttributeError, ValueError):  # not a text stream of its own
        sys.stdout.reconfigure(line_buffering=True)
    if args.command is None:
        parser.print_help(sys.stdout)
        return 0
    try:
        return args.run(args)
    except CourseError as exc:
        print(f"autograd-course {args.command}: {safe(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # runner.Interrupted says what was merged
        said = f"; {exc}" if str(exc) else ""
        print(f"autograd-course {args.command}: interrupted{said}", file=sys.stderr)
        return 130
