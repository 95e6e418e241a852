#!/usr/bin/env python3
"""Runs the documented commands: every `tidepool` line of a runnable block.

  run_doc_commands.py --tidepool BIN ROOT            every runnable block of README.md and docs/*.md
  run_doc_commands.py --quick --tidepool BIN ROOT    README.md's run; the docs' only checked against --help
  run_doc_commands.py --list --tidepool BIN ROOT     print what would run, run nothing

A fenced block is runnable when its info string says so after the language:

    ```sh runnable
    build/app/tidepool plan --model resnet18 --budget 450MiB
    ```

(GitHub and other renderers take the first word as the language, so it is
drawn as any sh block.) In such a block every line that invokes `tidepool`
(any path ending in it; continuations joined, `# comments` dropped) is run;
other lines (a `cmake` step) are listed as skipped. A line may start with
VAR=value assignments and `xvfb-run` or `mpirun` before `tidepool`.

Each page's runnable blocks run in order in one fresh temporary folder, as a
reader following the page would run them (a run's --out, then --resume and
view of it), so run folders never land in the repository and nothing the
user has is touched: the generated dataset is written once per invocation
under the temporary folder, XDG_CACHE_HOME points there too, and it is all
removed at the end (--keep keeps it). A command the page itself did not
prepare gets a fixture first (FIXTURES below).

A command is run shrunk (SHRINK below), or, where it cannot run here, only
checked against its command's --help (HELP_ONLY below): the subcommand must
exist, `--help` must exit 0 and every option the line gives must be in it
(a parse-only check: CLI11 answers --help before it looks at the other
options, so `<command> --help` alone would pass anything). Fails (exit 1)
naming the page, line and command, what was run and the tail of its
stderr, when a command exits non-zero, runs past --timeout, or gives an
option or subcommand that tidepool does not have.
"""
import argparse
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_docs import doc_files  # noqa: E402

# What is changed in a command before it runs, and why. Nothing else is.
SHRINK = [
    ('--epochs N (a new run)', '--iterations 1',
     'an epoch of generated is 79 iterations; one iteration plans, trains, tests and writes the same run folder'),
    ('--epochs N or --iterations N (a --resume)', '--iterations 2',
     'one more than the shrunk run it continues, so the resume trains'),
    ('--iterations N (a new run)', '--iterations 1', 'as --epochs'),
    ('a new run with neither', '--iterations 1 added', 'the default is a whole epoch'),
    ('--batch (training headless)', '--quiet added', 'no progress bar in the output a failure shows'),
    ('the window (no --batch) and `view`', 'run under `xvfb-run -a` with --screenshot FILE (if not given) and --frames 1',
     'it draws with data, writes a PNG and exits, on no display'),
    ('`profile` that measures (no --spec)', '--iterations 1 and --batch-size at most 16',
     'five batch sizes, three timed iterations each, take minutes'),
    ('mpirun ARGS', 'mpirun --allow-run-as-root --oversubscribe ARGS', 'as tests/testing/mpirun.h: CI is root, 2 cores'),
]

# What is only checked against --help, and why.
HELP_ONLY = [
    ('--device cuda', 'without --cuda (a build with the CUDA backend) and a GPU that `nvidia-smi -L` lists'),
    ('mpirun -H/--host/--hostfile', 'always: it names other machines'),
    ('mpirun', 'without mpirun on the PATH, or with --no-mpi (a build without MPI)'),
    ('the window and `view`', 'without xvfb-run, or with --no-window (a build without the window)'),
    ('training on cifar10, cifar100, fashion-mnist or imagenet', 'when its --data folder (or default) is missing'),
    ('any other wrapper (`nsys profile ...`)', 'always: only the tidepool command it wraps is checked'),
    ('every page but README.md under --quick', 'the default suite runs the quick start; `ctest -L long` runs all'),
]

# A command that names what its page did not make gets it first.
TRACE_FIXTURE = 'event,id,bytes,offload\nalloc,0,1048576,0\nalloc,1,524288,1\nfree,1,,\nfree,0,,\n'
FIXTURES = [
    ('`replay FILE`, FILE missing', "the repository's FILE where it has one (examples/), else docs/memory.md's "
                                    "four-line example trace"),
    ('`view FILE`, FILE missing', "the repository's FILE (a snapshot in examples/)"),
    ('`view DIR`, `view A B`, `diff A B` or `--resume DIR`, a folder missing', 'tidepool --batch --quiet --model resnet20 --iterations 1 --out DIR'),
]

FILE_DATASETS = {'cifar10': None, 'cifar100': None, 'imagenet': None,
                 'fashion-mnist': '/usr/share/datasets/fashion-mnist'}
SHELL_OPERATORS = {'|', '||', '&&', ';', '&', '>', '>>', '<', '2>', '2>&1'}


def runnable_lines(path):
    """(line number, text) of each line of the page's runnable blocks, continuations joined."""
    out, state, pending, start = [], None, '', 0
    for n, line in enumerate(open(path, encoding='utf-8').read().split('\n'), 1):
        stripped = line.strip()
        if stripped.startswith('```'):
            if state is None:
                words = stripped[3:].split()
                state = 'run' if words[:1] in (['sh'], ['bash'], ['shell']) and 'runnable' in words[1:] else 'other'
            else:
                state = None
            continue
        if state != 'run':
            continue
        if not pending:
            start = n
        if stripped.endswith('\\'):
            pending += stripped[:-1] + ' '
            continue
        out.append((start, pending + stripped))
        pending = ''
    return out


# `replay`'s options that take a value: the word after one is not FILE.
REPLAY_VALUE_OPTIONS = ('--device-index', '--budget', '--pytorch-alloc-conf')


def replay_file(args):
    """FILE of `replay [options] FILE [options]` (args[0] is 'replay'), or None."""
    words = iter(args[1:])
    for word in words:
        if word.startswith('-'):
            if word in REPLAY_VALUE_OPTIONS:
                next(words, None)
            continue
        return word
    return None


def option_value(args, name):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + '='):
            return a.split('=', 1)[1]
    return None


def without(args, *names):
    """args without the options named and their values."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        if a.split('=', 1)[0] in names and '=' in a:
            continue
        out.append(a)
    return out


def options_in_help(text):
    found = set()
    for line in text.split('\n'):
        m = re.match(r'\s+((?:-\w,)?--[a-z][\w-]*)', line)
        if m:
            found.update(m.group(1).split(','))
    return found


class Command:
    """A documented line, taken apart."""

    def __init__(self, page, number, text, subcommands):
        self.page, self.number, self.text = page, number, text
        self.env, self.wrapper, self.args, self.sub, self.problem = {}, [], [], None, None
        self.is_tidepool = False
        try:
            tokens = shlex.split(text, comments=True)
        except ValueError as e:
            self.problem = f'cannot be split as shell words: {e}'
            return
        i = 0
        while i < len(tokens) and re.fullmatch(r'[A-Za-z_]\w*=\S*', tokens[i]):
            key, value = tokens[i].split('=', 1)
            self.env[key] = value
            i += 1
        # the program, not a word that happens to be `tidepool` (nsys profile -o tidepool build/app/tidepool)
        named = [k for k in range(i, len(tokens)) if os.path.basename(tokens[k]) == 'tidepool']
        if not named:
            return
        at = next((k for k in named if '/' in tokens[k]), named[0])
        self.is_tidepool = True
        self.wrapper, self.args = tokens[i:at], tokens[at + 1:]
        if any(t in SHELL_OPERATORS for t in self.args):
            self.problem = 'a runnable line is one command (no pipes, ;, && or redirections)'
        elif self.args and not self.args[0].startswith('-'):
            if self.args[0] in subcommands:
                self.sub = self.args[0]
            else:
                self.problem = f'tidepool has no subcommand {self.args[0]!r} (it has {", ".join(subcommands)})'

    @property
    def where(self):
        return f'{self.page}:{self.number}'

    def has(self, *names):
        return any(a in names or a.split('=', 1)[0] in names for a in self.args)

    @property
    def help_wanted(self):
        return self.has('--help', '-h')

    @property
    def window(self):
        return (self.sub is None and not self.has('--batch') and not self.help_wanted) or self.sub == 'view'

    @property
    def trains(self):
        return self.sub is None and not self.help_wanted


class Runner:
    def __init__(self, args):
        self.binary = os.path.abspath(args.tidepool)
        self.root = os.path.abspath(args.root)
        self.timeout = args.timeout
        self.quick = args.quick
        self.list_only = args.list
        self.gpu = args.cuda and self._gpu_listed()
        self.mpirun = shutil.which('mpirun') if not args.no_mpi else None
        self.xvfb = shutil.which('xvfb-run') if not args.no_window else None
        self.helps = {}
        self.done = {}  # argv of a command that reads no folder -> where it first ran
        self.problems = []
        self.counts = {'ran': 0, '--help': 0, 'same as': 0, 'skipped': 0}
        self.tmp = tempfile.mkdtemp(prefix='tidepool-docs-')
        os.makedirs(os.path.join(self.tmp, 'data'))
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.tmp, 'cache'))

    @staticmethod
    def _gpu_listed():
        try:
            run = subprocess.run(['nvidia-smi', '-L'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True, timeout=30)
            return run.returncode == 0 and 'GPU' in run.stdout
        except (OSError, subprocess.TimeoutExpired):
            return False

    def help_text(self, sub):
        if sub not in self.helps:
            argv = [self.binary] + ([sub] if sub else []) + ['--help']
            run = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            if run.returncode != 0:
                raise RuntimeError(f'`tidepool {sub or ""} --help` exited {run.returncode}:\n{run.stdout}')
            self.helps[sub] = run.stdout
        return self.helps[sub]

    def say(self, command, verdict, shown):
        shown = ' '.join(shlex.quote(a) for a in shown)
        print(f'{command.where}: {verdict}: {shown}', flush=True)

    def fail(self, command, message):
        self.problems.append(f'{command.where}: `{command.text}`: {message}')
        print(f'{command.where}: FAILED: {message}', flush=True)

    # --- what to do with a line -------------------------------------------

    def help_only_reason(self, c, folder):
        if self.quick and c.page != 'README.md':
            return 'quick: `ctest -L long` runs it'
        if c.help_wanted:
            return None
        if c.has('--device') and option_value(c.args, '--device') == 'cuda' and not self.gpu:
            return 'needs a GPU'
        if c.wrapper:
            tool = os.path.basename(c.wrapper[0])
            if tool == 'mpirun':
                if any(w in ('-H', '--host', '-host', '--hostfile', '-hostfile') for w in c.wrapper):
                    return 'mpirun names other machines'
                if not self.mpirun:
                    return 'no mpirun here (or a build without MPI)'
            elif tool != 'xvfb-run':
                return f'wrapped in {tool}'
        if c.window and not self.xvfb:
            return 'no xvfb-run here (or a build without the window)'
        if c.trains or (c.sub == 'profile' and not c.has('--spec')):
            dataset = option_value(c.args, '--dataset')
            if dataset in FILE_DATASETS and not c.has('--resume'):
                data = option_value(c.args, '--data') or FILE_DATASETS[dataset]
                if not data or not os.path.isdir(os.path.join(folder, data)):
                    return f'no {dataset} files here'
        return None

    def shrunk(self, c, folder, number):
        """The argv to run (binary first, any wrapper before it)."""
        args = list(c.args)
        if c.trains:
            resume = c.has('--resume')
            if not resume or c.has('--epochs', '--iterations'):
                args = without(args, '--epochs', '--iterations') + ['--iterations', '2' if resume else '1']
            if c.has('--batch') and not c.has('--quiet'):
                args.append('--quiet')
        if c.sub == 'profile' and not c.has('--spec'):
            batch = int(option_value(args, '--batch-size') or 128)
            args = without(args, '--iterations', '--batch-size') + ['--iterations', '1',
                                                                    '--batch-size', str(min(batch, 16))]
        if c.window:
            if not c.has('--screenshot'):
                args += ['--screenshot', f'doc-line-{number}.png']
            args = without(args, '--frames') + ['--frames', '1']
        argv = [self.binary] + args
        if c.wrapper and os.path.basename(c.wrapper[0]) == 'mpirun':
            argv = ['mpirun', '--allow-run-as-root', '--oversubscribe'] + c.wrapper[1:] + argv
        if c.window:
            argv = ['xvfb-run', '-a'] + argv
        return argv

    def fixtures(self, c, folder):
        """Make what the command reads and its page did not make; False on failure."""
        replayed = replay_file(c.args) if c.sub == 'replay' else None
        if replayed:
            path = os.path.join(folder, replayed)
            committed = os.path.join(self.root, replayed)
            if not os.path.exists(path) and os.path.isfile(committed):  # examples/*.pickle: the real file
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copyfile(committed, path)
                print(f'{c.where}: fixture: {replayed} (copied from the repository)', flush=True)
            if not os.path.exists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(TRACE_FIXTURE)
                print(f'{c.where}: fixture: {replayed} (the example trace of docs/memory.md)', flush=True)
        if c.sub == 'view' and len(c.args) > 1 and os.path.isfile(os.path.join(self.root, c.args[1])):
            path = os.path.join(folder, c.args[1])  # a snapshot (examples/*.pickle), not a run folder
            if not os.path.exists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                shutil.copyfile(os.path.join(self.root, c.args[1]), path)
                print(f'{c.where}: fixture: {c.args[1]} (copied from the repository)', flush=True)
            return True
        if c.trains:
            run_dirs = [option_value(c.args, '--resume')]
        elif c.sub == 'view':  # one run folder, or two compared (the paths before any option)
            paths = list(itertools.takewhile(lambda a: not a.startswith('-'), c.args[1:]))
            run_dirs = paths[:2]
        elif c.sub == 'diff':  # two run folders
            run_dirs = [a for a in c.args[1:] if not a.startswith('-')][:2]
        else:
            run_dirs = []
        for run_dir in run_dirs:
            if run_dir and not os.path.exists(os.path.join(folder, run_dir)):
                argv = [self.binary, '--batch', '--quiet', '--model', 'resnet20', '--iterations', '1', '--out', run_dir]
                print(f'{c.where}: fixture: {run_dir}: tidepool {" ".join(argv[1:])}', flush=True)
                if self.execute(c, argv, folder, c.env, 'making its fixture') is False:
                    return False
        return True

    def execute(self, c, argv, folder, env, what='running'):
        """Seconds it took, or False (and the failure noted) when it failed."""
        started = time.monotonic()
        # a session of its own, so that a timeout ends xvfb-run's or mpirun's children too
        proc = subprocess.Popen(argv, cwd=folder, env=dict(self.env, **env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors='replace',
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            self.fail(c, f'{what} `{" ".join(argv)}` ran past {self.timeout:.0f} s' + tail(err or out))
            return False
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            self.fail(c, f'{what} `{" ".join(argv)}` (in a fresh folder; {seconds:.1f} s) exited {proc.returncode}'
                         + tail(err if err.strip() else out))
            return False
        return seconds

    def options_known(self, c, how=''):
        """Every option the line gives is its command's (a removed option fails here); False if not."""
        try:
            known = options_in_help(self.help_text(c.sub))
        except RuntimeError as e:
            self.fail(c, str(e))
            return False
        for a in c.args:
            option = a.split('=', 1)[0]
            if re.fullmatch(r'--?[a-zA-Z][\w-]*', option) and option not in known:
                self.fail(c, f'`tidepool{" " + c.sub if c.sub else ""}` has no option {option}{how}')
                return False
        return True

    def check_help(self, c, reason):
        """The parse-only check: the command exists and takes every option the line gives."""
        if not self.options_known(c, f' (checked against its --help: {reason})'):
            return False
        self.counts['--help'] += 1
        self.say(c, f'--help only ({reason})', ['tidepool'] + ([c.sub] if c.sub else []) + ['--help'])
        return True

    def page(self, rel, lines, subcommands):
        """Runs a page's lines in order, up to the first that fails (what follows may build on it)."""
        folder = os.path.join(self.tmp, re.sub(r'\W', '_', rel))
        os.makedirs(folder)
        os.symlink(os.path.join(self.tmp, 'data'), os.path.join(folder, 'data'))
        failed_at = self.page_lines(rel, lines, subcommands, folder)
        if failed_at is not None and failed_at < lines[-1][0]:
            print(f'{rel}: the lines after {failed_at} are not run (they may build on it)', flush=True)

    def page_lines(self, rel, lines, subcommands, folder):
        """The number of the line that failed, or None."""
        for number, text in lines:
            c = Command(rel, number, text, subcommands)
            if c.problem:
                self.fail(c, c.problem)
                return number
            if not c.is_tidepool:
                if text.strip() and not text.strip().startswith('#'):
                    self.counts['skipped'] += 1
                    print(f'{c.where}: skipped (not a tidepool command): {text}', flush=True)
                continue
            reason = self.help_only_reason(c, folder)
            if reason:
                if not self.check_help(c, reason):
                    return number
                continue
            if not self.options_known(c):
                return number
            argv = self.shrunk(c, folder, number)
            shown = ['tidepool' if a == self.binary else a for a in argv]
            key = (tuple(argv), tuple(sorted(c.env.items())))
            profile = option_value(c.args, '--profile')
            reads_folder = (c.sub in ('replay', 'view') or c.has('--resume', '--out', '--data')
                            or (profile and os.path.exists(os.path.join(folder, profile))))
            if not reads_folder and key in self.done:
                self.counts['same as'] += 1
                self.say(c, f'same as {self.done[key]}', shown)
                continue
            if self.list_only:
                self.say(c, 'would run', shown)
                continue
            if not self.fixtures(c, folder):
                return number
            seconds = self.execute(c, argv, folder, c.env)
            if seconds is False:
                return number
            self.done.setdefault(key, c.where)
            self.counts['ran'] += 1
            self.say(c, f'ran ({seconds:.1f} s)', [f'{k}={v}' for k, v in c.env.items()] + shown)


def tail(text, lines=15):
    kept = [l for l in text.rstrip().split('\n') if l.strip()][-lines:]
    return ('; the last lines of its output:\n' + '\n'.join('    ' + l for l in kept)) if kept else ''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', help='the repository root')
    parser.add_argument('--tidepool', required=True, help='the tidepool binary')
    parser.add_argument('--quick', action='store_true',
                        help="run README.md's runnable blocks; check the docs' lines against --help only")
    parser.add_argument('--cuda', action='store_true',
                        help='the binary has the CUDA backend: run --device cuda lines where nvidia-smi lists a GPU')
    parser.add_argument('--no-mpi', action='store_true', help='a build without MPI: mpirun lines --help only')
    parser.add_argument('--no-window', action='store_true', help='a build without the window: its lines --help only')
    parser.add_argument('--timeout', type=float, default=300, help='seconds one command may take (default 300)')
    parser.add_argument('--list', action='store_true', help='say what would run, run nothing')
    parser.add_argument('--keep', action='store_true', help='keep the temporary folder')
    args = parser.parse_args()

    runner = Runner(args)
    started = time.monotonic()
    if args.list:
        for title, table in (('shrunk', SHRINK), ('--help only', HELP_ONLY), ('fixtures', FIXTURES)):
            print(f'{title}:')
            for row in table:
                print('  ' + ' -> '.join(row))
        print(f'a GPU: {"yes" if runner.gpu else "no"}; mpirun: {runner.mpirun or "no"}; '
              f'xvfb-run: {runner.xvfb or "no"}\n')
    try:
        subcommands = re.findall(r'^  (\w[\w-]*)\s', runner.help_text(None).split('Subcommands:', 1)[-1], re.M)
        if not subcommands:
            print(f'{args.tidepool} --help lists no subcommands (expected a "Subcommands:" section)')
            return 1
        pages = 0
        for path in doc_files(args.root):
            if not os.path.exists(path):
                continue
            lines = runnable_lines(path)
            if lines:
                pages += 1
                runner.page(os.path.relpath(path, args.root), lines, subcommands)
        if pages == 0 or (runner.counts['ran'] == 0 and not args.list and not runner.problems):
            runner.problems.append('no runnable block ran a tidepool command (```sh runnable blocks: see docs/testing.md)')
    finally:
        if args.keep:
            print(f'kept {runner.tmp}')
        else:
            shutil.rmtree(runner.tmp, ignore_errors=True)
    c = runner.counts
    summary = (f'{c["ran"]} ran, {c["--help"]} checked against --help, {c["same as"]} the same as one before, '
               f'{c["skipped"]} lines not tidepool; {time.monotonic() - started:.0f} s')
    if runner.problems:
        print(f'\nrun_doc_commands: {len(runner.problems)} failed ({summary}):')
        for p in runner.problems:
            print(p)
        return 1
    print(f'run_doc_commands: ok ({summary})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
