"""The isolation report: heatmap cells, colours, escaping of every name, the sections of report.md/html."""
import json
import xml.etree.ElementTree as ET

from ansible_collections.xuanwu.cluster.plugins.module_utils import _isolate as iso
from ansible_collections.xuanwu.cluster.plugins.plugin_utils import _isolation_report as rep

FLOORS = {'busbw_gbps': 330.0, 'ib_write_bw_gbps': None}
EVIL = '<b>&"x|`y`'
HOSTS = ['n1', 'n2', 'n3', EVIL]


def _report():
    def measure(pair, _round, _wave):
        if 'n3' in pair:
            return {'busbw_gbps': 180.0}
        return {'busbw_gbps': 360.0}
    verdict = iso.run(HOSTS, measure, FLOORS)
    return {'run_id': 'r<1>', 'started_at': 's', 'finished_at': 'f', 'playbook': 'isolate', 'hosts': HOSTS, 'verdict': verdict}


def test_heatmap_is_valid_svg_with_escaped_labels_and_one_cell_per_half_pair():
    report = _report()
    svg = rep.heatmap_svg(report['verdict'], HOSTS)
    root = ET.fromstring(svg)                       # well-formed: every name escaped
    texts = [t.text for t in root.iter('{http://www.w3.org/2000/svg}text')]
    assert EVIL in texts and '<b>' not in svg
    cells = [r for r in root.iter('{http://www.w3.org/2000/svg}rect') if r.find('{http://www.w3.org/2000/svg}title') is not None]
    assert len(cells) == 2 * report['verdict']['pair_runs']
    slow = [c for c in cells if 'n3' in c.find('{http://www.w3.org/2000/svg}title').text]
    assert slow and all(c.get('fill') == rep.colour(180.0 / 330.0) for c in slow)


def test_colours_under_and_over_the_floor():
    assert rep.colour(0.5) == '#b2182b' and rep.colour(1.2) == '#1a9641' and rep.colour(1.0) == '#a6d96a'
    assert rep.colour(None) == '#8c8c8c' and rep.colour(0.1) == rep.colour(0.5)


def test_report_files_name_the_bad_node_with_evidence_and_escape_names():
    files = rep.render_all(_report())
    assert sorted(files) == ['isolation-heatmap.svg', 'isolation.json', 'report.html', 'report.md']
    data = json.loads(files['isolation.json'])
    assert [b['host'] for b in data['verdict']['bad_nodes']] == ['n3']
    md = files['report.md']
    assert '**n3**' in md and 'round 2: ' in md and '180.0 GB/s (floor 330.0)' in md and EVIL not in md
    page = files['report.html']
    assert '<svg' in page and EVIL not in page and 'r&lt;1&gt;' in page


def test_a_bad_link_is_reported_as_a_link_in_every_file():
    """(was a playbook run of isolate.yml: the verdict logic is iso.run's, the words are the renderer's; the playbook's
    wiring and exit codes stay proven by tests/integration/test_isolate_playbook.py)"""
    hosts = ['node1', 'node2', 'node3', 'node4']

    def measure(pair, _round, _wave):
        return {'busbw_gbps': 180.0 if sorted(pair) == ['node3', 'node4'] else 360.0}
    verdict = iso.run(hosts, measure, FLOORS)
    assert verdict['bad_nodes'] == [] and verdict['inconclusive'] == [] and verdict['rounds'] == 2
    assert [link['pair'] for link in verdict['bad_links']] == [['node3', 'node4']]
    assert verdict['host_status']['node3'] == 'bad_link' and verdict['host_status']['node4'] == 'bad_link'
    files = rep.render_all({'run_id': 'r', 'started_at': 's', 'finished_at': 'f', 'playbook': 'isolate', 'hosts': hosts,
                            'verdict': verdict})
    assert '## Bad links' in files['report.md'] and 'node3 with node4' in files['report.md']
    assert 'node3 with node4' in files['report.html']
    assert json.loads(files['isolation.json'])['verdict']['bad_links'][0]['pair'] == ['node3', 'node4']


def _files(hosts, verdict):
    return rep.render_all({'run_id': 'r', 'started_at': 's', 'finished_at': 'f', 'playbook': 'isolate', 'hosts': hosts, 'verdict': verdict})


def test_every_file_states_the_coverage_and_a_partial_one_is_no_clean_pass():
    hosts = ['node%d' % i for i in range(1, 7)]
    quick = iso.run(hosts, lambda pair, _r, _w: {'busbw_gbps': 360.0}, FLOORS)
    files = _files(hosts, quick)
    data = json.loads(files['isolation.json'])['verdict']
    assert data['coverage']['tested'] == [['node1', 'node2'], ['node3', 'node4'], ['node5', 'node6']]
    assert (data['coverage']['links_tested'], data['coverage']['links_total'], data['passed']) == (3, 15, [])
    sentence = 'no bad node found among the tested pairs; 3 of 15 links tested (coverage partial)'
    md, page = files['report.md'], files['report.html']
    assert sentence in data['answer'] and sentence.capitalize() in md and sentence.capitalize() in page
    assert '## Coverage' in md and '-e xuanwu_isolation_coverage=full to test every link (5 waves' in md and 'xuanwu_isolation_coverage=full' in page
    assert '**Passed, every link tested**: none' in md and 'node1 (1 of 5)' in md and 'node1 with node2; node3 with node4' in md

    full = iso.run(hosts, lambda pair, _r, _w: {'busbw_gbps': 180.0 if pair == ['node2', 'node5'] else 360.0}, FLOORS, coverage='full')
    files = _files(hosts, full)
    md = files['report.md']
    assert '15 of 15 links tested (coverage full' in md and 'every pair of the 6 hosts' in md
    assert '**node2 with node5**: node2 with node5 under the floor while node2 passed with 4 other partner(s)' in md
    assert json.loads(files['isolation.json'])['verdict']['passed'] == ['node1', 'node3', 'node4', 'node6']
