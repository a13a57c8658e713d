"""The batch examples of README.md and docs/jobs.md work as printed: every batch file that a ``xuanwu batch`` of
theirs names is shipped in the checkout, every batch that they print is one of those files word for word, each
passes validation where it lies (its input folder, inventory, playbook and program exist), and ``xuanwu batch``
runs each of them, as printed, from the top folder of a copy of the checkout's examples."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from real_jobs import ROOT, env
from xuanwu.config import Config
from xuanwu.spec import parse_batch

PAGES = ('README.md', 'docs/jobs.md')
FENCE = re.compile(r'^(```+|~~~+)\s*([\w-]*)\s*$')
# `xuanwu batch PATH`, PATH a real file name (not a placeholder such as BATCH.json)
BATCH_COMMAND = re.compile(r'(?:^|[\s;&|(`])xuanwu batch ([a-z0-9_./-]+\.(?:json|ya?ml))(?=[\s;&|)`]|$)', re.M)


def code_blocks(text: str) -> list:
    """(language, text) of every code block of a Markdown page: fenced ones, and indented ones (language '')."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].startswith(fence.group(1)):
                end += 1
            blocks.append((fence.group(2), '\n'.join(lines[i + 1:end])))
            i = end + 1
        elif lines[i].startswith('    ') and (i == 0 or not lines[i - 1].strip()):
            end = i
            while end < len(lines) and lines[end].startswith('    '):
                end += 1
            blocks.append(('', '\n'.join(line[4:] for line in lines[i:end])))
            i = end
        else:
            i += 1
    return blocks


def _page(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding='utf-8') as handle:
        return handle.read()


def named_batches() -> list:
    """The batch files the pages run (``xuanwu batch PATH`` in a code block or a code span), relative to the
    checkout's top folder, in order of first mention."""
    found = []
    for page in PAGES:
        text = _page(page)
        where = [block for dummy, block in code_blocks(text)] + re.findall(r'`([^`\n]+)`', text)
        for snippet in where:
            found += [path for path in BATCH_COMMAND.findall(snippet) if path not in found]
    return found


def printed_batches() -> list:
    """(page, data) of every batch the pages print in a code block."""
    out = []
    for page in PAGES:
        for dummy, block in code_blocks(_page(page)):
            if '"task_list"' not in block and '"output_dir"' not in block:
                continue
            data = json.loads(block)    # a batch printed that is not JSON fails here, naming the block
            assert isinstance(data, dict), block
            out.append((page, data))
    return out


def _load(path: str):
    with open(os.path.join(ROOT, path), encoding='utf-8') as handle:
        return json.load(handle)


def test_the_pages_run_shipped_batch_files_and_print_them_word_for_word():
    named = named_batches()
    assert 'examples/batch/batch.json' in named and len(named) >= 2, named    # README's, and docs/jobs.md's
    assert [path for path in named if not os.path.isfile(os.path.join(ROOT, path))] == []
    printed = printed_batches()
    assert len(printed) >= 2, printed
    shipped = [_load(path) for path in named]
    assert [(page, data) for page, data in printed if data not in shipped] == []
    # what they write when run in the checkout stays out of git
    for path in named:
        folder = os.path.dirname(os.path.join(ROOT, path))
        with open(os.path.join(folder, '.gitignore'), encoding='utf-8') as handle:
            ignored = handle.read().split()
        assert os.path.normpath(_load(path)['output_dir']) + '/' in ignored, path


@pytest.mark.parametrize('path', named_batches())
def test_a_batch_file_of_the_pages_is_valid_where_it_lies(tmp_path, path):
    config = Config(project_root=ROOT, data_dir=tmp_path / 'home')
    folder = os.path.dirname(os.path.join(ROOT, path))
    spec = parse_batch(_load(path), config, base_dir=folder)    # input_dir, inventory, playbook: there
    for task in spec.tasks:
        # the program of a command template lies next to the batch file (its tasks run in that folder)
        for word in task.job.argv or shlex.split(task.job.command or ''):
            if re.search(r'\.(py|sh)$', word):
                assert os.path.isfile(os.path.join(folder, word)), '%s: %s names %s' % (path, task.task_id, word)


def _ansible_playbook() -> bool:
    return bool(shutil.which('ansible-playbook', path=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ.get('PATH', '')])))


@pytest.mark.parametrize('path', named_batches())
def test_a_batch_file_of_the_pages_runs_as_printed(tmp_path, path):
    if any('playbook' in task['params'] for task in _load(path)['task_list']) and not _ansible_playbook():
        pytest.skip('ansible-playbook is not installed')
    top = tmp_path / 'checkout'
    shutil.copytree(os.path.join(ROOT, 'examples'), top / 'examples')     # the checkout's examples, not its git tree
    (tmp_path / 'xuanwu.yml').write_text('scheduler: local\n')
    done = subprocess.run([sys.executable, '-m', 'xuanwu.cli', 'batch', path], cwd=str(top), capture_output=True, check=False,
                          text=True, timeout=300, env=env(XUANWU_HOME=str(tmp_path / 'home'),
                                                          XUANWU_CONFIG=str(tmp_path / 'xuanwu.yml')))
    assert done.returncode == 0, done.stdout + done.stderr
    batch = _load(path)
    out = top / os.path.dirname(path) / batch['output_dir']
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['status'] == 'succeeded'
    assert [(t['task_id'], t['status']) for t in summary['tasks']] == [
        (t['task_id'], 'succeeded') for t in batch['task_list']]
    if 'command' in batch:      # the template's program wrote each task's result into its folder
        for task in batch['task_list']:
            result = json.loads((out / task['task_id'] / 'result.json').read_text())
            assert (result['model'], result['steps']) == (task['params']['model'], task['params']['steps'])
