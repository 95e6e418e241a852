#!/usr/bin/env python3
"""Docs that cannot rot: checks README.md and docs/*.md against the tree.

  check_docs.py ROOT                       links and the README's layout
  check_docs.py --tidepool BIN ROOT        also: every option of BIN's help is documented
  check_docs.py --options-only --tidepool BIN ROOT

Fails (exit 1, one line per problem) when
  - a relative link in README.md or docs/*.md points to a file that does not
    exist, to a heading (#anchor) that the file does not have, or outside the
    repository (../ beyond its root);
  - a folder named in the README's layout block (the first ``` block after
    "## Layout") does not exist, or a folder of engine/ is not named in
    docs/layers.md (where the layout sends the reader for the engine);
  - an option (--something) in `tidepool --help` or `tidepool <command> --help`
    appears in none of README.md and docs/*.md;
  - a `tidepool` command line in a shell block of README.md or docs/*.md
    (```sh, ```sh runnable, ...) gives an option its command does not have
    (a renamed or removed option leaves no example behind).
scripts/run_doc_commands.py runs the lines of the ```sh runnable blocks.
Links to http(s):, mailto: and the like are not followed. Text in code blocks
and inline code is not read for links.
"""
import argparse
import os
import re
import subprocess
import sys


def doc_files(root):
    files = [os.path.join(root, 'README.md')]
    docs = os.path.join(root, 'docs')
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    return files


def strip_code(text):
    """The text without fenced blocks and inline code, as lines (same count)."""
    out, fenced = [], False
    for line in text.split('\n'):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            out.append('')
            continue
        out.append('' if fenced else line)
    # inline code may run over a line break; keep the breaks
    text = re.sub(r'`[^`]*`', lambda m: '\n' * m.group().count('\n'), '\n'.join(out))
    return text.split('\n')


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r'[^\w\- ]', '', s)
    return s.replace(' ', '-')


def anchors(path, cache={}):
    if path in cache:
        return cache[path]
    found, seen, fenced = set(), {}, False
    for line in open(path, encoding='utf-8').read().split('\n'):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = re.match(r'#{1,6}\s+(.*?)\s*#*\s*$', line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f'{base}-{n}')
        for a in re.findall(r'<a\s+(?:id|name)="([^"]+)"', line):
            found.add(a)
    cache[path] = found
    return found


LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')


def check_links(root):
    problems = []
    root = os.path.realpath(root)
    for path in doc_files(root):
        if not os.path.exists(path):
            problems.append(f'{os.path.relpath(path, root)}: missing')
            continue
        rel = os.path.relpath(path, root)
        text = '\n'.join(strip_code(open(path, encoding='utf-8').read()))
        for match in LINK.finditer(text):  # a link's text may run over lines
            target = match.group(1)
            number = text.count('\n', 0, match.start(1)) + 1
            if re.match(r'[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                continue  # http:, https:, mailto: ...
            file_part, _, anchor = target.partition('#')
            where = f'{rel}:{number}: link {target}'
            if file_part.startswith('/'):
                problems.append(f'{where}: an absolute path; links are relative to the page')
                continue
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if dest != root and not dest.startswith(root + os.sep):
                problems.append(f'{where}: points outside the repository')
                continue
            if not os.path.exists(dest):
                problems.append(f'{where}: {os.path.relpath(dest, root)} does not exist')
                continue
            if anchor:
                if not dest.endswith('.md') or os.path.isdir(dest):
                    problems.append(f'{where}: an anchor into a file that is not markdown')
                elif anchor not in anchors(dest):
                    problems.append(f'{where}: {os.path.relpath(dest, root)} has no heading #{anchor}')
    return problems


def check_layout(root):
    lines = open(os.path.join(root, 'README.md'), encoding='utf-8').read().split('\n')
    try:
        start = next(i for i, l in enumerate(lines) if re.match(r'##\s+Layout\s*$', l))
        open_fence = next(i for i in range(start, len(lines)) if lines[i].startswith('```'))
        close_fence = next(i for i in range(open_fence + 1, len(lines)) if lines[i].startswith('```'))
    except StopIteration:
        return ['README.md: no "## Layout" section with a ``` block']
    problems, named = [], 0
    for number in range(open_fence + 1, close_fence):
        m = re.match(r'(\S+/)(\s|$)', lines[number])
        if not m:
            continue
        named += 1
        folder = m.group(1)
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append(f'README.md:{number + 1}: layout names {folder}, which does not exist')
    if named == 0:
        problems.append('README.md: the layout block names no folder')
    return problems + check_engine_folders(root)


def check_engine_folders(root):
    """Every folder of engine/ (two levels: the layers, the backends and
    their inner folders) is named in docs/layers.md, which the README's
    layout points to for the engine, as `folder/` or engine/folder/."""
    engine = os.path.join(root, 'engine')
    layers = os.path.join(root, 'docs', 'layers.md')
    if not os.path.isdir(engine):
        return []
    if not os.path.isfile(layers):
        return ['docs/layers.md: missing (the README\'s layout points to it for engine/)']
    text = open(layers, encoding='utf-8').read()
    problems = []
    for top in sorted(os.listdir(engine)):
        if not os.path.isdir(os.path.join(engine, top)):
            continue
        folders = [top] + [top + '/' + inner for inner in sorted(os.listdir(os.path.join(engine, top)))
                           if os.path.isdir(os.path.join(engine, top, inner))]
        for folder in folders:
            if f'`{folder}/`' not in text and f'engine/{folder}/' not in text:
                problems.append(f'docs/layers.md: names no engine/{folder}/ (write it in the table or the text)')
    return problems


def help_text(binary, *args):
    run = subprocess.run([binary, *args, '--help'], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60)
    if run.returncode != 0:
        raise RuntimeError(f'{binary} {" ".join(args)} --help exited {run.returncode}:\n{run.stdout}')
    return run.stdout


def subcommands(text):
    names, inside = [], False
    for line in text.split('\n'):
        if re.match(r'Subcommands:\s*$', line):
            inside = True
            continue
        if inside:
            m = re.match(r'  (\w[\w-]*)\s', line)
            if m:
                names.append(m.group(1))
            elif line.strip() and not line.startswith(' '):
                break
    return names


def options_of(text):
    """The long options a --help text lists, in order."""
    options = []
    for line in text.split('\n'):
        m = re.match(r'\s+(?:-\w,)?(--[a-z][\w-]*)', line)
        if m and m.group(1) not in options:
            options.append(m.group(1))
    return options


def shell_commands(path):
    """(line number, command line) of each line of a sh block, continuations joined."""
    out, fenced, pending, start = [], False, '', 0
    for n, line in enumerate(open(path, encoding='utf-8').read().split('\n'), 1):
        if line.lstrip().startswith('```'):
            # the info string's first word is the language (```sh runnable is an sh block)
            fenced = (line.strip()[3:].split() or [''])[0] in ('sh', 'bash', 'shell') if not fenced else False
            continue
        if not fenced:
            continue
        if not pending:
            start = n
        if line.rstrip().endswith('\\'):
            pending += line.rstrip()[:-1] + ' '
            continue
        out.append((start, pending + line))
        pending = ''
    return out


def check_commands(root, binary, commands, texts):
    """Every option a documented tidepool command line gives is its command's."""
    problems = []
    invocation = re.compile(r'(?:^|[\s/])tidepool(?=\s|$)')
    for path in doc_files(root):
        if not os.path.exists(path):
            continue
        for n, line in shell_commands(path):
            line = re.sub(r'\s#.*$', '', line)  # a comment
            starts = [m.end() for m in invocation.finditer(line)]
            if not starts:
                continue
            words = line[starts[-1]:].split('|')[0].replace('&&', ' ; ').split(';')[0].split()
            command = 'tidepool'
            for w in words:
                if not w.startswith('-'):
                    if f'tidepool {w}' in texts:
                        command = f'tidepool {w}'
                    break
            known = set(options_of(texts[command])) | {'--help'}
            for w in words:
                option = w.split('=', 1)[0]
                if re.fullmatch(r'--[a-z][\w-]*', option) and option not in known:
                    rel = os.path.relpath(path, root)
                    problems.append(f'{rel}:{n}: `{command} ... {option}`: {command} has no option {option}')
    return problems


def check_options(root, binary):
    top = help_text(binary)
    commands = subcommands(top)
    if not commands:
        return [f'{binary} --help lists no subcommands (expected a "Subcommands:" section)']
    texts = {'tidepool': top}
    for command in commands:
        texts[f'tidepool {command}'] = help_text(binary, command)
    docs = '\n'.join(open(p, encoding='utf-8').read() for p in doc_files(root) if os.path.exists(p))
    problems = check_commands(root, binary, commands, texts)
    for where, text in texts.items():
        options = options_of(text)
        if not options:
            problems.append(f'{where} --help: no options found')
        for option in options:
            if not re.search(r'(?<![\w-])' + re.escape(option) + r'(?![\w-])', docs):
                problems.append(f'{where} --help: {option} appears in none of README.md and docs/*.md')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', help='the repository root')
    parser.add_argument('--tidepool', help='a tidepool binary: check that every option of its help is documented')
    parser.add_argument('--options-only', action='store_true', help='check only the options (needs --tidepool)')
    args = parser.parse_args()
    if args.options_only and not args.tidepool:
        parser.error('--options-only needs --tidepool')
    problems = []
    if not args.options_only:
        problems += check_links(args.root)
        problems += check_layout(args.root)
    if args.tidepool:
        problems += check_options(args.root, args.tidepool)
    for problem in problems:
        print(problem)
    if problems:
        print(f'check_docs: {len(problems)} problem(s)', file=sys.stderr)
        return 1
    print('check_docs: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
