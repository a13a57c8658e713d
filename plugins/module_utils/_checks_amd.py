# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks of AMD Instinct GPUs (profile ``gpu.vendor: amd``): the tools, count, model, memory, PCIe,
ECC mode and counters, bad pages, and the xGMI link of every GPU pair. The checks shared with NVIDIA keep
their ids (gpu.count, gpu.memory, gpu.pcie_link, gpu.ecc_*) with AMD remediation texts. Called by
``_checks.check_node`` in place of ``_checks_gpu.check_gpu``. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _checks_gpu as checks_gpu
from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import _c, _num

CHECKS = {
    'gpu.amd_tools_missing': _c(
        'AMD GPU tools (amd-smi, rocm-smi) not installed', 'amd-smi', 'fail',
        'neither amd-smi nor rocm-smi answered on a node whose profile has gpu.vendor amd',
        'Install ROCm\'s amd-smi (package "amd-smi-lib", with the amdgpu-dkms driver for the running kernel), check that '
        'the amdgpu module is loaded (`lsmod | grep amdgpu`, `dmesg | grep -i amdgpu`), then run `amd-smi list`.'),
    'gpu.bad_pages': _c(
        'Too many retired (bad) HBM pages', 'gpu<N>', 'fail',
        'amd-smi bad-pages: retired <= gpu.bad_pages.retired_max and unreservable <= gpu.bad_pages.unreservable_max',
        'Drain the node; run `amd-smi bad-pages -g {index}` and `amd-smi static --ras -g {index}` (bad page threshold); '
        'a GPU near its RAS threshold is retired by the driver: run the AMD GPU field health check and open an RMA with '
        'the GPU serial.'),
    'gpu.bad_pages_pending': _c(
        'Bad HBM pages pending retirement', 'gpu<N>', 'fail', 'amd-smi bad-pages: pending <= gpu.bad_pages.pending_max',
        'Drain the node and reset the GPU (`amd-smi reset -G -g {index}`) or reboot so the driver retires the pending '
        'pages; check `amd-smi bad-pages -g {index}` again.'),
    'gpu.xgmi_link': _c(
        'GPU pair not joined by the expected xGMI link', 'gpu<A><->gpu<B>', 'fail',
        'amd-smi topology: link type of every GPU pair (both sides) is gpu.xgmi.pair_link_type and its hops <= '
        'gpu.xgmi.max_hops; a pair the tool does not list is absent',
        'Run `amd-smi topology -t -b` and `amd-smi xgmi`: a pair over PCIe or several hops means a missing xGMI link; check '
        'the xGMI errors (`amd-smi metric --ecc-blocks`, XGMI_WAFL), reset the GPUs, then reseat/replace the OAM or the '
        'universal baseboard and open an RMA with the node serial.'),
    'gpu.xgmi_link_down': _c(
        'xGMI link down', 'gpu<A><->gpu<B>', 'fail',
        'link_status of the pair (amd-smi topology, either side) and its xGMI link state (amd-smi xgmi) are up',
        'Run `amd-smi topology -a -t` and `amd-smi xgmi` for the pair; reset both GPUs (`amd-smi reset -G`); if the link '
        'stays down, check the XGMI_WAFL error counters and the kernel log (`dmesg | grep -i xgmi`), reseat/replace the '
        'OAM or baseboard and open an RMA with the node serial.'),
    'gpu.xgmi_speed': _c(
        'xGMI slower than expected', 'gpu<N>', 'fail', 'amd-smi xgmi bit_rate of the GPU >= gpu.xgmi.bit_rate_gbps_min',
        'Run `amd-smi xgmi -g {index}`; check the xGMI per-link power-down policy (`amd-smi static --xgmi-plpd`), reset '
        'the GPU, update the IFWI/firmware bundle; open an RMA with the node serial if the rate stays low.'),
}

# AMD texts of the checks that NVIDIA and AMD GPUs share (ids of _checks_gpu.CHECKS).
REMEDIATION = {
    'gpu.count': 'Run `amd-smi list` and `lspci -d 1002: -nn`: a GPU that lspci sees but amd-smi does not failed init '
                 '(`dmesg | grep -i amdgpu`); one that lspci does not see needs reseating, an OAM/baseboard check or an RMA '
                 'with the node serial.',
    'gpu.model': 'The node does not have the GPU model of its profile: assign the right profile to the host (inventory '
                 'group) or fix the hardware inventory.',
    'gpu.memory': 'Check `amd-smi static --vram --partition -g {index}`: less memory than the model has means a memory '
                  'partition mode (NPS4) or compute partition (CPX) splits the GPU, or a faulty GPU; set the partition '
                  'modes back (`amd-smi set --memory-partition NPS1`, `--compute-partition SPX`), RMA if it stays short.',
    'gpu.pcie_link': 'Check `amd-smi metric --pcie -g {index}` and `lspci -vv -s {bus}` (LnkSta vs LnkCap): reseat the '
                     'OAM or its retimer, check the BIOS PCIe settings, update the BIOS; RMA if it persists.',
    'gpu.pcie_downtrained': 'Re-check under load (`amd-smi metric --pcie -g {index}`); if it stays low: reseat the OAM, '
                            'check for AER errors in dmesg, update BIOS/retimer firmware.',
    'gpu.ecc_mode': 'ECC of the HBM (UMC block) is off: check `amd-smi static --ras -g {index}`; enable RAS in the amdgpu '
                    'driver (`amdgpu.ras_enable=1`, no ras_mask that drops UMC) and reboot; contact the vendor if it stays off.',
    'gpu.ecc_uncorrectable': 'Drain the node, read `amd-smi metric --ecc --ecc-blocks -g {index}` and `amd-smi bad-pages '
                             '-g {index}`; reset the GPU (`amd-smi reset -G -g {index}`) so the bad pages are retired; if '
                             'errors come back, run the AMD GPU field health check and open an RMA with the GPU serial.',
    'gpu.ecc_correctable': 'Watch the trend (`amd-smi metric --ecc --ecc-blocks -g {index}`); run the AMD GPU field health '
                           'check in a maintenance window; plan an RMA if the count keeps rising.',
}

# The checks of _checks_gpu.CHECKS that only NVIDIA GPUs have (not applicable on a profile with gpu.vendor amd).
NVIDIA_ONLY = tuple(check for check in checks_gpu.CHECKS if check not in REMEDIATION)
# Every check of an AMD node's GPUs but the tools' own: not measured where the GPUs could not be read.
DEVICE_CHECKS = tuple(check for check in sorted(set(CHECKS) | set(REMEDIATION)) if check != 'gpu.amd_tools_missing')
XGMI_CHECKS = ('gpu.xgmi_link', 'gpu.xgmi_link_down', 'gpu.xgmi_speed')


def check_amd(run):
    """Every check of the ``gpu`` section of a profile with ``gpu.vendor: amd``."""
    want = run.profile.get('gpu')
    if not want:
        return
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    devices = [d for d in (gpu.get('devices') or []) if isinstance(d, dict)]
    if gpu.get('vendor') != 'amd' or gpu.get('installed') is False:
        if gpu.get('vendor') != 'amd' and run.status('nvidia_query_gpu') is None and run.status('amd_static') is None:
            run.unknown(['amd_static'], 'gpu', 'the GPUs', checks=DEVICE_CHECKS + ('gpu.amd_tools_missing',))
        elif want['count'] > 0:
            run.add('gpu.amd_tools_missing', 'amd-smi', 'not installed', '%d GPU(s)' % want['count'],
                    'neither amd-smi nor rocm-smi is installed: no ROCm tools on a node whose profile wants %d AMD GPU(s)'
                    % want['count'])
            run.unmeasured(DEVICE_CHECKS, 'the GPUs: neither amd-smi nor rocm-smi is installed (gpu.amd_tools_missing)')
        else:
            run.skip(DEVICE_CHECKS, 'the profile wants no GPU (gpu.count 0)')
        return
    if not devices and gpu.get('count') is None:
        run.unknown(['amd_static'], 'gpu', 'the GPUs', checks=DEVICE_CHECKS)
        return
    if len(devices) != want['count']:
        run.add('gpu.count', 'gpu', len(devices), want['count'],
                'found %d GPU(s), profile %s wants %d' % (len(devices), run.profile['name'], want['count']),
                remediation=REMEDIATION['gpu.count'])
    tool = gpu.get('tool') or 'amd-smi'
    for i, dev in enumerate(devices):
        if dev.get('parse_error') and dev.get('bus_id') is None and dev.get('name') is None:
            continue    # not understood: probe.section_parse_error names it
        _check_device(run, want, dev, checks_gpu._gpu_name(dev, i), tool)
    _check_xgmi(run, want, gpu, devices)


def _check_device(run, want, dev, name, tool):
    index = dev.get('index')
    label = '%s (%s)' % (name, dev.get('bus_id')) if dev.get('bus_id') else name
    ctx = {'index': index if index is not None else name[3:], 'bus': dev.get('bus_id') or '<bus>'}
    with_text = checks_gpu._with
    checks_gpu.check_model_memory(run, want, dev, name, label, ctx, ('amd-smi static --asic', 'amd-smi static --vram'),
                                  remediation=REMEDIATION)
    _check_pcie(run, want, dev, name, label, ctx)
    if want['ecc_required']:
        mode = dev.get('ecc_mode')
        if mode is None:
            run.not_measured(name, 'ECC mode', 'amd-smi static --ras (ECC_BLOCK_STATE UMC)', checks=('gpu.ecc_mode',))
        elif mode is not True:
            run.add('gpu.ecc_mode', name, False, True, '%s: ECC of the HBM (UMC) is disabled' % label,
                    **with_text(ctx, REMEDIATION['gpu.ecc_mode']))
    else:
        run.skip(['gpu.ecc_mode'], checks_gpu.NOT_ASKED['gpu.ecc_mode'])
    limits = want['ecc_errors']
    if not any(limits.get(k) is not None for k in limits):
        run.skip(('gpu.ecc_uncorrectable', 'gpu.ecc_correctable'), checks_gpu.NOT_ASKED['gpu.ecc_uncorrectable'])
    else:
        ecc = dev.get('ecc_errors') if isinstance(dev.get('ecc_errors'), dict) else {}
        volatile = ecc.get('volatile') if isinstance(ecc.get('volatile'), dict) else {}
        if not [v for v in volatile.values() if v is not None]:
            how = 'amd-smi metric --ecc' + (' (rocm-smi prints none)' if tool == 'rocm-smi' else '')
            run.not_measured(name, 'ECC error counters', how, checks=('gpu.ecc_uncorrectable', 'gpu.ecc_correctable'))
        else:
            checks_gpu._check_ecc_counts(run, want, dev, name, label, ctx, remediation=REMEDIATION)
    _check_bad_pages(run, want, dev, name, label, ctx)


def _check_pcie(run, want, dev, name, label, ctx):
    """gpu.pcie_link / gpu.pcie_downtrained as for NVIDIA, with the AMD remediation texts."""
    before = len(run.findings)
    checks_gpu._check_pcie(run, want['pcie'], dev, name, label, ctx, how='amd-smi static --bus; amd-smi metric --pcie')
    for finding in run.findings[before:]:
        if finding['check'] in REMEDIATION:
            finding['remediation'] = checks_gpu._with(ctx, REMEDIATION[finding['check']])['remediation']


def _check_bad_pages(run, want, dev, name, label, ctx):
    limits = want.get('bad_pages') or {}
    if limits.get('retired_max') is None and limits.get('unreservable_max') is None:
        run.skip(['gpu.bad_pages'], 'the profile sets no gpu.bad_pages.retired_max or unreservable_max')
    if limits.get('pending_max') is None:
        run.skip(['gpu.bad_pages_pending'], 'the profile sets no gpu.bad_pages.pending_max')
    if all(limits.get(k) is None for k in ('retired_max', 'pending_max', 'unreservable_max')):
        return
    pages = dev.get('bad_pages')
    if not isinstance(pages, dict):
        run.not_measured(name, 'bad pages', 'amd-smi bad-pages -g %s' % ctx['index'], checks=('gpu.bad_pages', 'gpu.bad_pages_pending'))
        return
    over = []
    for key, limit_key in (('retired', 'retired_max'), ('unreservable', 'unreservable_max')):
        limit, count = limits.get(limit_key), pages.get(key)
        if limit is None:
            continue
        if count is None:
            run.not_measured(name, '%s pages' % key, 'amd-smi bad-pages -g %s' % ctx['index'], checks=('gpu.bad_pages',))
        elif count > limit:
            over.append('%d %s (max %d)' % (count, key, limit))
    if over:
        run.add('gpu.bad_pages', name, ', '.join(over), 'within gpu.bad_pages',
                '%s has bad HBM pages: %s' % (label, ', '.join(over)), **ctx)
    limit, count = limits.get('pending_max'), pages.get('pending')
    if limit is not None:
        if count is None:
            run.not_measured(name, 'pending pages', 'amd-smi bad-pages -g %s' % ctx['index'], checks=('gpu.bad_pages_pending',))
        elif count > limit:
            run.add('gpu.bad_pages_pending', name, count, limit,
                    '%s has %d page(s) pending retirement; reset the GPU to retire them' % (label, count), **ctx)


def _check_xgmi(run, want, gpu, devices):
    spec = want.get('xgmi')
    if not spec:
        run.skip(XGMI_CHECKS, 'the profile sets no gpu.xgmi')
        return
    if spec.get('bit_rate_gbps_min') is None:
        run.skip(['gpu.xgmi_speed'], 'the profile sets no gpu.xgmi.bit_rate_gbps_min')
    if not spec['links_up_required']:
        run.skip(['gpu.xgmi_link_down'], 'the profile does not require the xGMI links up (gpu.xgmi.links_up_required)')
    links = gpu.get('links')
    if not isinstance(links, dict):
        run.unknown(['amd_topology'], 'gpu xgmi', 'xGMI links between the GPUs (amd-smi topology --json)', checks=XGMI_CHECKS)
        return
    indexes = [d.get('index', i) for i, d in enumerate(devices)]
    for a_pos, a in enumerate(indexes):
        for b in indexes[a_pos + 1:]:
            _check_pair(run, spec, links.get('%s-%s' % (min(a, b), max(a, b))), 'gpu%s<->gpu%s' % (min(a, b), max(a, b)),
                        min(a, b))
    rate_min = spec.get('bit_rate_gbps_min')
    if rate_min is not None:
        xgmi = gpu.get('xgmi') if isinstance(gpu.get('xgmi'), dict) else {}
        for index in indexes:
            rate = _num((xgmi.get(str(index)) or {}).get('bit_rate_gbps'))
            if rate is None:
                run.not_measured('gpu%s' % index, 'xGMI bit rate', 'amd-smi xgmi -g %s' % index, checks=('gpu.xgmi_speed',))
            elif rate < rate_min:
                run.add('gpu.xgmi_speed', 'gpu%s' % index, rate, rate_min,
                        'gpu%s xGMI runs at %g Gb/s, profile wants at least %g Gb/s' % (index, rate, rate_min), index=index)


def _check_pair(run, spec, link, component, index):
    expected = '%s, <= %d hop(s)' % (spec['pair_link_type'], spec['max_hops'])
    if not isinstance(link, dict):
        run.add('gpu.xgmi_link', component, 'absent', expected,
                '%s: amd-smi topology lists no link between the pair' % component, index=index)
        return
    kind, hops = link.get('link_type'), link.get('hops')
    if kind is None:
        run.not_measured(component, 'xGMI link type', 'amd-smi topology -t', checks=('gpu.xgmi_link',))
    elif kind != spec['pair_link_type'] or (isinstance(hops, int) and hops > spec['max_hops']):
        measured = '%s, %s hop(s)' % (kind, hops if hops is not None else '?')
        run.add('gpu.xgmi_link', component, measured, expected,
                '%s is joined by %s, profile wants %s' % (component, measured, expected), index=index)
    if spec['links_up_required']:
        if link.get('up') is False:
            run.add('gpu.xgmi_link_down', component, link.get('status') or 'down', 'ENABLED',
                    '%s: the xGMI link is down (link_status %s)' % (component, link.get('status') or 'down'), index=index)
        elif link.get('up') is None:
            run.not_measured(component, 'xGMI link state', 'amd-smi topology -a (link_status)', checks=('gpu.xgmi_link_down',))
