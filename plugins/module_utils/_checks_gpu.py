# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node checks of the GPUs: count, model, memory, PCIe, ECC, row remapping, topology, NVLink, Xid events,
and the driver read from its three places. Called by ``_checks.check_node``. Pure: no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings
from ansible_collections.xuanwu.cluster.plugins.module_utils._checks_base import (
    _c, _num, _link_score, link_at_least, _norm_bus,
)


# The checks of this module (the catalogue of every check: plugins/module_utils/_catalogue.py).
# Remediation texts may name {placeholders}; a finding fills them in, the docs show <placeholder>.
CHECKS = {
    # --- GPU ------------------------------------------------------------------------------
    'gpu.driver_missing': _c(
        'NVIDIA driver / nvidia-smi not installed', 'nvidia-smi', 'fail',
        'gpu.installed is false while the profile wants GPUs',
        'Install the NVIDIA data-center driver for the running kernel (e.g. the distro "nvidia-driver-<branch>-server-open" '
        'package or the CUDA repository), reboot or modprobe nvidia, then check `nvidia-smi`.'),
    'gpu.count': _c(
        'Number of GPUs', 'gpu', 'fail', 'len(gpu.devices) == gpu.count',
        'Run `nvidia-smi -L` and `lspci -d 10de: -nn`: a GPU that lspci sees but nvidia-smi does not fell off the bus or '
        'failed init (check dmesg for Xid/NVRM); one that lspci does not see needs reseating, a riser/cable check or an RMA '
        'with the node serial.'),
    'gpu.model': _c(
        'GPU model', 'gpu<N>', 'fail', 'gpu.model is a substring of devices[].name',
        'The node does not have the GPU model of its profile: assign the right profile to the host (inventory group) or '
        'fix the hardware inventory.'),
    'gpu.memory': _c(
        'GPU memory size', 'gpu<N>', 'fail', 'devices[].memory_total_mib >= gpu.memory_mib_min',
        'Check `nvidia-smi -q -d MEMORY -i {index}`: less memory than the model has means a MIG/vGPU configuration, ECC '
        'mode change or a faulty GPU; disable MIG (`nvidia-smi -mig 0 -i {index}`), reset the GPU, RMA if it stays short.'),
    'gpu.pcie_link': _c(
        'GPU PCIe link below the minimum', 'gpu<N>', 'fail',
        'devices[].pcie_gen_max >= gpu.pcie.gen_min and pcie_width_current >= gpu.pcie.width_min; measured is the link '
        'as read, current and maximum (`Gen4 x8 (max Gen5 x16)`)',
        'Check `nvidia-smi -q -d PCI -i {index}` and `lspci -vv -s {bus}` (LnkSta vs LnkCap): reseat the GPU or its '
        'riser/retimer card, check BIOS PCIe settings (link speed forced to a lower Gen), update BIOS; RMA if it persists.'),
    'gpu.pcie_downtrained': _c(
        'GPU PCIe link trained below its maximum', 'gpu<N>', 'warn',
        'devices[].pcie_gen_current == pcie_gen_max and pcie_width_current == pcie_width_max (a current Gen below '
        'gpu.pcie.gen_min that the link can reach warns here: idle GPUs may lower it)',
        'Re-check under load (an idle GPU may lower its PCIe generation to save power): `nvidia-smi -q -d PCI -i {index}`. '
        'If it stays low: reseat the GPU/riser, check for AER errors in dmesg, update BIOS/retimer firmware.'),
    'gpu.persistence_mode': _c(
        'GPU persistence mode', 'gpu<N>', 'fail', 'devices[].persistence_mode is true',
        'Enable the persistence daemon: `systemctl enable --now nvidia-persistenced` (or `nvidia-smi -pm 1`).'),
    'gpu.ecc_mode': _c(
        'GPU ECC mode', 'gpu<N>', 'fail', 'devices[].ecc_mode is true',
        'Enable ECC: `nvidia-smi -e 1 -i {index}`, then reset the GPU (`nvidia-smi -r -i {index}`) or reboot.'),
    'gpu.ecc_uncorrectable': _c(
        'Uncorrectable ECC errors', 'gpu<N>', 'fail',
        'sum of *uncorrectable ECC counters (volatile, aggregate) <= gpu.ecc_errors.*_uncorrectable_max',
        'Drain the node, check `nvidia-smi -q -d ECC,ROW_REMAPPER -i {index}`; reset the GPU to trigger row remapping; if '
        'errors come back or remapping failed, run `dcgmi diag -r 3` and open an RMA with the GPU serial.'),
    'gpu.ecc_correctable': _c(
        'Many correctable ECC errors', 'gpu<N>', 'warn',
        'sum of correctable ECC counters <= gpu.ecc_errors.*_correctable_warn_above',
        'Watch the trend (`nvidia-smi -q -d ECC -i {index}`); run `dcgmi diag -r 3` in a maintenance window; plan an RMA '
        'if the count keeps rising.'),
    'gpu.remapped_rows_pending': _c(
        'Row remapping pending', 'gpu<N>', 'fail', 'devices[].remapped_rows.pending is false',
        'Reset the GPU to apply the pending row remap: drain it, then `nvidia-smi -r -i {index}` (or reboot the node).'),
    'gpu.remapped_rows_failure': _c(
        'Row remapping failed', 'gpu<N>', 'fail', 'devices[].remapped_rows.failure is false',
        'The GPU has run out of spare rows or remapping failed: drain the node and open an RMA with the GPU serial '
        '(`nvidia-smi -q -i {index} | grep -i serial`).'),
    'gpu.retired_pages_pending': _c(
        'Page retirement pending', 'gpu<N>', 'warn', 'devices[].retired_pages.pending is false',
        'Reset the GPU (`nvidia-smi -r -i {index}`) or reboot to retire the pending pages.'),
    'gpu.retired_pages': _c(
        'Too many retired pages', 'gpu<N>', 'fail', 'retired_pages.single_bit + double_bit <= gpu.retired_pages_max',
        'The GPU has retired many pages: run `dcgmi diag -r 3` and open an RMA with the GPU serial.'),
    'gpu.clock_events': _c(
        'GPU clocks held down by hardware', 'gpu<N>', 'fail',
        'devices[].clocks_event_reasons_active has none of gpu.clock_event_reasons.fail',
        'Check `nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER -i {index}`: HW slowdown/thermal means cooling (fans, '
        'airflow, blanking panels, inlet temperature) or a failing sensor; power brake means the PSU/BMC asserted it (check '
        'PSUs and the BMC event log). Contact the vendor if it persists at idle.'),
    'gpu.clock_events_warn': _c(
        'GPU clocks held down by software limits', 'gpu<N>', 'warn',
        'devices[].clocks_event_reasons_active has none of gpu.clock_event_reasons.warn',
        'Check `nvidia-smi -q -d PERFORMANCE,TEMPERATURE -i {index}`; improve cooling or review power/clock settings.'),
    'gpu.topology': _c(
        'GPU pair connection', 'gpu<A><->gpu<B>', 'fail',
        'nvidia-smi topo -m link of every GPU pair is at least gpu.topology.gpu_pair_link (or the pair override)',
        'Run `nvidia-smi topo -m` and `nvidia-smi nvlink --status`. Fewer NVLinks than expected: check Fabric Manager '
        '(`systemctl status nvidia-fabricmanager`, same version as the driver) on NVSwitch systems, reset the GPUs, then '
        'reseat/replace the GPU baseboard or NVSwitch tray and open an RMA with the node serial. PCIe-only paths: the GPUs '
        'are in the wrong slots or a VM lacks NVLink pass-through.'),
    'gpu.nic_affinity': _c(
        'GPU to NIC path (NCCL route)', 'gpu<N>', 'warn',
        'best GPU-to-NIC link in nvidia-smi topo -m is at least gpu.topology.nic_link',
        'NCCL will route this GPU\'s network traffic through the CPU: check `nvidia-smi topo -m` and NIC placement (same '
        'PCIe switch as the GPU), that the RDMA driver is loaded (NICs appear in the matrix), and NCCL_IB_HCA / NCCL_NET '
        'settings; with NCCL_DEBUG=INFO look for "GPU Direct RDMA Disabled".'),
    'gpu.driver_library_mismatch': _c(
        'NVIDIA kernel module and NVML disagree', 'nvidia driver', 'fail',
        'gpu.kernel_module.version (/proc/driver/nvidia/version) equals the driver version NVML reports (nvidia-smi), '
        'and nvidia-smi does not fail with "Driver/library version mismatch"',
        'The driver was upgraded (or partly removed) while the old kernel module stayed loaded: user space is {measured}. '
        'Drain the node, then reboot it (or stop every GPU user, nvidia-persistenced, nvidia-fabricmanager and DCGM, and '
        '`rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia` so the new module loads); check that the driver packages '
        'are all of one version (`dpkg -l | grep -i nvidia` / `rpm -qa | grep -i nvidia`) and that DKMS built the module '
        'for the running kernel.'),
    'gpu.driver_version_mixed': _c(
        'GPUs of one node report different driver versions', 'nvidia driver', 'fail',
        'devices[].driver_version (nvidia-smi --query-gpu) and gpu.driver_version (nvidia-smi -q -x) are one value',
        'The node was read in the middle of a driver change, or two driver installations are mixed. Reinstall one driver '
        'branch, reboot, and validate the node again.'),
    'gpu.nvlink_count': _c(
        'NVLinks missing', 'gpu<N>', 'fail', 'number of NVLinks nvidia-smi lists for the GPU >= gpu.nvlink.links_per_gpu',
        'Run `nvidia-smi nvlink --status -i {index}`; no links listed: check Fabric Manager on NVSwitch systems and the '
        'driver; reset the GPU; reseat/replace the GPU baseboard or NVSwitch tray; open an RMA with the node serial.'),
    'gpu.nvlink_down': _c(
        'NVLink inactive', 'gpu<N>/nvlink<L> or gpu<N>', 'fail',
        'every link is active while fewer than gpu.nvlink.links_per_gpu are; a GPU for which nvidia-smi prints "all links '
        'are inActive" instead of its links is one finding on gpu<N>, measured `all links inactive`',
        'Run `nvidia-smi nvlink --status -i {index}` and `nvidia-smi nvlink -e -i {index}` (error counters); reset the GPU; '
        'reseat/replace the GPU baseboard or NVSwitch tray; open an RMA with the node serial.'),
    'gpu.nvlink_speed': _c(
        'NVLink slower than expected', 'gpu<N>/nvlink<L>', 'fail', 'active link speed_gbps >= gpu.nvlink.speed_gbps_min',
        'Run `nvidia-smi nvlink --status -i {index}`; reset the GPU; reseat/replace the GPU baseboard or NVSwitch tray; '
        'open an RMA with the node serial.'),
    'gpu.nvlink_errors': _c(
        'NVLink error counters above the bound', 'gpu<N>/nvlink<L>', 'warn',
        'every counter of gpu.nvlink.errors_max <= its bound (nvidia-smi nvlink -e, since the driver loaded or the '
        'counters were reset)',
        'Replays, recoveries and CRC errors mean a link that corrupts or retrains: run `nvidia-smi nvlink -e -i {index}` '
        'again after a load (growing counters: reset the GPU, reseat/replace the GPU baseboard or NVSwitch tray, open an '
        'RMA with the node serial); a count from an old incident clears with `nvidia-smi nvlink -re` and a re-check.'),
    'gpu.xid_fatal': _c(
        'Fatal Xid in the kernel log', 'gpu<N>', 'fail', 'gpu.xid_events has no Xid of gpu.xid.fatal',
        'Drain the node; collect `nvidia-bug-report.sh`; reset the GPU or reboot; run `dcgmi diag -r 3`; open an RMA with '
        'the GPU serial if it repeats. See NVIDIA\'s Xid catalog for Xid {xid}.'),
    'gpu.xid': _c(
        'Other Xid in the kernel log', 'gpu<N>', 'warn', 'gpu.xid_events has no Xid outside gpu.xid.ignore',
        'Look up Xid {xid} in NVIDIA\'s Xid catalog; application-level Xids (13, 31, 43, 45) need the job owner, others a '
        'GPU reset; escalate if it repeats without a job running.'),
}

# The checks of the driver itself; the others read the GPUs (not measured where nvidia-smi could not read them).
DRIVER_CHECKS = ('gpu.driver_missing', 'gpu.driver_library_mismatch', 'gpu.driver_version_mixed')
DEVICE_CHECKS = tuple(check for check in CHECKS if check not in DRIVER_CHECKS)
NVLINK_CHECKS = ('gpu.nvlink_count', 'gpu.nvlink_down', 'gpu.nvlink_speed')
# Why a check the profile does not ask for is not applicable (a key it leaves unset).
NOT_ASKED = {
    'gpu.model': 'the profile sets no gpu.model',
    'gpu.memory': 'the profile sets no gpu.memory_mib_min',
    'gpu.pcie_link': 'the profile sets no gpu.pcie.gen_min or gpu.pcie.width_min',
    'gpu.pcie_downtrained': 'the profile does not ask for downtrained links (gpu.pcie.warn_downtrained)',
    'gpu.persistence_mode': 'the profile does not require persistence mode (gpu.persistence_mode_required)',
    'gpu.ecc_mode': 'the profile does not require ECC (gpu.ecc_required)',
    'gpu.ecc_uncorrectable': 'the profile sets no bound in gpu.ecc_errors',
    'gpu.ecc_correctable': 'the profile sets no bound in gpu.ecc_errors',
    'gpu.retired_pages': 'the profile sets no gpu.retired_pages_max',
    'gpu.topology': 'the profile sets no gpu.topology.gpu_pair_link or gpu.topology.pairs',
    'gpu.nic_affinity': 'the profile sets no gpu.topology.nic_link',
    'gpu.nvlink_count': 'the profile sets no gpu.nvlink.links_per_gpu',
    'gpu.nvlink_down': 'the profile sets no gpu.nvlink.links_per_gpu',
    'gpu.nvlink_speed': 'the profile sets no gpu.nvlink.speed_gbps_min',
    'gpu.nvlink_errors': 'the profile sets no gpu.nvlink.errors_max',
}


def _not_asked(run, checks):
    for check in checks:
        run.skip([check], NOT_ASKED[check])


# ---------------------------------------------------------------------------------------------
# GPU.

def _gpu_name(dev, i):
    index = dev.get('index')
    return 'gpu%s' % (index if index is not None else i)


def _sum_counters(block, uncorrectable):
    if not isinstance(block, dict):
        return None
    total, seen = 0, False
    for key, value in block.items():
        key = str(key).lower()
        if 'correctable' not in key or ('uncorrectable' in key) != uncorrectable:
            continue
        value = _num(value)
        if value is not None:
            total += value
            seen = True
    return int(total) if seen else None


def check_gpu(run):
    want = run.profile.get('gpu')
    if not want:
        return
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    if gpu.get('vendor') == 'amd':
        gpu = {'installed': False}    # an AMD node: no NVIDIA driver
    status = run.status('nvidia_query_gpu')
    devices = [d for d in (gpu.get('devices') or []) if isinstance(d, dict)]
    if gpu.get('installed') is False or (status == 'missing' and not devices):
        if want['count'] > 0:
            run.add('gpu.driver_missing', 'nvidia-smi', 'not installed', '%d GPU(s)' % want['count'],
                    'nvidia-smi is not installed: no NVIDIA driver on a node whose profile wants %d GPU(s)' % want['count'])
            run.unmeasured(DEVICE_CHECKS + DRIVER_CHECKS[1:], 'the GPUs: nvidia-smi is not installed (gpu.driver_missing)')
        else:
            run.skip(DEVICE_CHECKS + DRIVER_CHECKS, 'the profile wants no GPU (gpu.count 0)')
        return
    _check_driver_sources(run, gpu, devices)
    if not devices and gpu.get('count') is None:
        run.unknown(['nvidia_query_gpu'], 'gpu', 'the GPUs', checks=DEVICE_CHECKS)
        return
    count = len(devices)
    if count != want['count']:
        run.add('gpu.count', 'gpu', count, want['count'],
                'found %d GPU(s), profile %s wants %d' % (count, run.profile['name'], want['count']))
    for i, dev in enumerate(devices):
        if dev.get('parse_error') and dev.get('bus_id') is None and dev.get('name') is None:
            continue    # its row was not understood: probe.section_parse_error names it, nothing here is measured
        _check_gpu_device(run, want, dev, _gpu_name(dev, i))
    _check_topology(run, want, gpu, devices)
    _check_nvlink(run, want, gpu, devices)
    _check_nvlink_errors(run, want, gpu, devices)
    _check_xid(run, want, gpu, devices)


def nvml_mismatch(gpu):
    error = gpu.get('nvml_error') if isinstance(gpu, dict) else None
    return isinstance(error, dict) and 'version mismatch' in str(error.get('message')).lower()


def _check_driver_sources(run, gpu, devices):
    """The driver as its kernel module reports it, as NVML reports it, and as each GPU reports it."""
    module = gpu.get('kernel_module') if isinstance(gpu.get('kernel_module'), dict) else {}
    module_version = module.get('version')
    if nvml_mismatch(gpu):
        library = gpu['nvml_error'].get('nvml_library_version')
        measured = 'kernel module %s, NVML library %s' % (module_version or 'unknown', library or 'unknown')
        run.add('gpu.driver_library_mismatch', 'nvidia driver', measured, 'one driver version',
                'nvidia-smi fails with "Failed to initialize NVML: Driver/library version mismatch" (%s): no GPU can be '
                'read or used until the loaded module matches the installed driver' % measured)
        return
    seen = {}
    for i, dev in enumerate(devices):
        if dev.get('driver_version'):
            seen.setdefault(str(dev['driver_version']), []).append(_gpu_name(dev, i))
    if gpu.get('driver_version'):
        seen.setdefault(str(gpu['driver_version']), []).append('nvidia-smi -q -x')
    if len(seen) > 1:
        measured = '; '.join('%s: %s' % (version, ', '.join(where)) for version, where in sorted(seen.items()))
        run.add('gpu.driver_version_mixed', 'nvidia driver', measured, 'one driver version',
                'the GPUs of this node do not report one driver version: %s' % measured)
    if not seen:
        return
    if not module_version:
        run.unknown(['nvidia_proc_version'], 'nvidia driver', 'the loaded kernel module\'s version (/proc/driver/nvidia/version)',
                    checks=('gpu.driver_library_mismatch',))
        return
    nvml = sorted(seen)
    if nvml != [str(module_version)]:
        measured = 'kernel module %s, NVML %s' % (module_version, ', '.join(nvml))
        run.add('gpu.driver_library_mismatch', 'nvidia driver', measured, 'one driver version',
                'the loaded NVIDIA kernel module is %s (/proc/driver/nvidia/version) but nvidia-smi reports driver %s'
                % (module_version, ', '.join(nvml)))


def _check_gpu_device(run, want, dev, name):
    index = dev.get('index')
    label = '%s (%s)' % (name, dev.get('bus_id')) if dev.get('bus_id') else name
    ctx = {'index': index if index is not None else name[3:], 'bus': dev.get('bus_id') or '<bus>'}
    check_model_memory(run, want, dev, name, label, ctx, ('nvidia-smi -L', 'nvidia-smi -q -d MEMORY'))
    _check_pcie(run, want['pcie'], dev, name, label, ctx)
    if want['persistence_mode_required']:
        mode = dev.get('persistence_mode')
        if mode is None:
            run.not_measured(name, 'persistence mode', 'nvidia-smi -q | grep Persistence', checks=('gpu.persistence_mode',))
        elif mode is not True:
            run.add('gpu.persistence_mode', name, False, True, '%s: persistence mode is off' % label, **ctx)
    else:
        _not_asked(run, ['gpu.persistence_mode'])
    if want['ecc_required']:
        mode = dev.get('ecc_mode')
        if mode is None:
            run.not_measured(name, 'ECC mode', 'nvidia-smi -q -d ECC', checks=('gpu.ecc_mode',))
        elif mode is not True:
            run.add('gpu.ecc_mode', name, False, True, '%s: ECC is disabled' % label, **ctx)
    else:
        _not_asked(run, ['gpu.ecc_mode'])
    _check_gpu_health(run, want, dev, name, label, ctx)


def check_model_memory(run, want, dev, name, label, ctx, how, remediation=None):
    """gpu.model and gpu.memory; ``how`` is (how to read the model, how to read the memory size) by hand,
    ``remediation`` a vendor's texts by check id."""
    remediation = remediation or {}
    if not want.get('model'):
        _not_asked(run, ['gpu.model'])
    if want.get('memory_mib_min') is None:
        _not_asked(run, ['gpu.memory'])
    if want.get('model'):
        model = dev.get('name')
        if model is None:
            run.not_measured(name, 'GPU model', how[0], checks=('gpu.model',))
        elif want['model'].lower() not in str(model).lower():
            run.add('gpu.model', name, model, want['model'], '%s is a %s, profile wants %s' % (label, model, want['model']),
                    **_with(ctx, remediation.get('gpu.model')))
    if want.get('memory_mib_min') is not None:
        mem = _num(dev.get('memory_total_mib'))
        if mem is None:
            run.not_measured(name, 'memory size', how[1], checks=('gpu.memory',))
        elif mem < want['memory_mib_min']:
            run.add('gpu.memory', name, int(mem), want['memory_mib_min'],
                    '%s has %d MiB, profile wants at least %d MiB' % (label, mem, want['memory_mib_min']),
                    **_with(ctx, remediation.get('gpu.memory')))


def _check_pcie(run, want, dev, name, label, ctx, how='nvidia-smi -q -d PCI'):
    gen_cur, gen_max = _num(dev.get('pcie_gen_current')), _num(dev.get('pcie_gen_max'))
    width_cur, width_max = _num(dev.get('pcie_width_current')), _num(dev.get('pcie_width_max'))
    # As measured: the current generation and width, then the most the link can reach.
    measured = 'Gen%s x%s (max Gen%s x%s)' % (_int(gen_cur), _int(width_cur), _int(gen_max), _int(width_max))
    problems = []
    if want.get('gen_min') is None and want.get('width_min') is None:
        _not_asked(run, ['gpu.pcie_link'])
    if not want.get('warn_downtrained'):
        _not_asked(run, ['gpu.pcie_downtrained'])
    if want.get('gen_min') is not None:
        gen = gen_max if gen_max is not None else gen_cur
        if gen is None:
            run.not_measured(name, 'PCIe generation', how, checks=('gpu.pcie_link',))
        elif gen < want['gen_min']:
            problems.append('Gen%d (max the link can reach), profile wants Gen%d' % (gen, want['gen_min']))
    if want.get('width_min') is not None:
        if width_cur is None:
            run.not_measured(name, 'PCIe width', how, checks=('gpu.pcie_link',))
        elif width_cur < want['width_min']:
            problems.append('x%d, profile wants x%d' % (width_cur, want['width_min']))
    if problems:
        run.add('gpu.pcie_link', name, measured,
                'Gen%s x%s' % (want.get('gen_min') or '?', want.get('width_min') or '?'),
                '%s PCIe link: %s' % (label, '; '.join(problems)), **ctx)
    elif want.get('warn_downtrained'):
        low = []
        if gen_cur is not None and gen_max is not None and gen_cur < gen_max:
            below = want.get('gen_min') is not None and gen_cur < want['gen_min']
            low.append('Gen%d of Gen%d%s' % (gen_cur, gen_max, ' (below the profile\'s Gen%d)' % want['gen_min'] if below else ''))
        if width_cur is not None and width_max is not None and width_cur < width_max:
            low.append('x%d of x%d' % (width_cur, width_max))
        if low:
            run.add('gpu.pcie_downtrained', name, measured,
                    'Gen%s x%s' % (_int(gen_max), _int(width_max)),
                    '%s PCIe link runs at %s' % (label, ', '.join(low)), **ctx)


def _int(value):
    return '?' if value is None else '%d' % value


def _check_gpu_health(run, want, dev, name, label, ctx):
    _check_ecc_counts(run, want, dev, name, label, ctx)
    rows = dev.get('remapped_rows')
    if isinstance(rows, dict):
        if rows.get('failure') is True:
            run.add('gpu.remapped_rows_failure', name, True, False, '%s: row remapping failed' % label, **ctx)
        if rows.get('pending') is True:
            run.add('gpu.remapped_rows_pending', name, True, False, '%s: a row remap is pending; reset the GPU to apply it' % label,
                    **ctx)
    pages = dev.get('retired_pages')
    if isinstance(pages, dict):
        if pages.get('pending') is True:
            run.add('gpu.retired_pages_pending', name, True, False, '%s: page retirement is pending; reset the GPU' % label, **ctx)
        limit = want.get('retired_pages_max')
        if limit is None:
            _not_asked(run, ['gpu.retired_pages'])
        counts = [_num(pages.get(k)) for k in ('single_bit', 'double_bit')]
        counts = [c for c in counts if c is not None]
        if limit is not None and counts and sum(counts) > limit:
            run.add('gpu.retired_pages', name, int(sum(counts)), limit,
                    '%s has %d retired pages, profile allows %d' % (label, sum(counts), limit), **ctx)
    reasons = dev.get('clocks_event_reasons_active')
    if isinstance(reasons, list):
        active = [str(r) for r in reasons]
        fail = [r for r in active if r in want['clock_event_reasons']['fail']]
        warn = [r for r in active if r in want['clock_event_reasons']['warn']]
        if fail:
            run.add('gpu.clock_events', name, active, 'none of %s' % ', '.join(want['clock_event_reasons']['fail']),
                    '%s clocks are held down: %s' % (label, ', '.join(fail + warn)), **ctx)
        elif warn:
            run.add('gpu.clock_events_warn', name, active, 'none of %s' % ', '.join(want['clock_event_reasons']['warn']),
                    '%s clocks are held down: %s' % (label, ', '.join(warn)), **ctx)


def _check_ecc_counts(run, want, dev, name, label, ctx, remediation=None):
    """gpu.ecc_uncorrectable / gpu.ecc_correctable from ``ecc_errors`` (``remediation``: a vendor's texts by check)."""
    remediation = remediation or {}
    ecc = dev.get('ecc_errors')
    limits = want['ecc_errors']
    if not any(limits.get(key) is not None for key in limits):
        _not_asked(run, ['gpu.ecc_uncorrectable', 'gpu.ecc_correctable'])
    if not isinstance(ecc, dict):
        run.unmeasured(('gpu.ecc_uncorrectable', 'gpu.ecc_correctable'), '%s: the ECC error counters were not reported' % name)
        return
    bad = _over_limits(ecc, limits, '%s_uncorrectable_max', True)
    if bad:
        run.add('gpu.ecc_uncorrectable', name, '; '.join(bad), 'uncorrectable <= %s' % limits.get('volatile_uncorrectable_max'),
                '%s has uncorrectable ECC errors: %s' % (label, '; '.join(bad)),
                **_with(ctx, remediation.get('gpu.ecc_uncorrectable')))
    warn = _over_limits(ecc, limits, '%s_correctable_warn_above', False)
    if warn:
        run.add('gpu.ecc_correctable', name, '; '.join(warn), 'correctable within the thresholds',
                '%s has many correctable ECC errors: %s' % (label, '; '.join(warn)),
                **_with(ctx, remediation.get('gpu.ecc_correctable')))


def _over_limits(ecc, limits, limit_key, uncorrectable):
    """``scope total > limit`` for each scope (volatile, aggregate) whose counter sum is above its limit."""
    out = []
    for scope in ('volatile', 'aggregate'):
        limit = limits.get(limit_key % scope)
        total = _sum_counters(ecc.get(scope), uncorrectable=uncorrectable)
        if limit is not None and total is not None and total > limit:
            out.append('%s %s > %s' % (scope, total, limit))
    return out


def _with(ctx, remediation):
    """``ctx`` plus a vendor's remediation text (its {placeholders} filled from ``ctx``)."""
    if remediation is None:
        return ctx
    return dict(ctx, remediation=_findings.render(remediation, ctx))


def _check_topology(run, want, gpu, devices):
    topo_want = want.get('topology') or {}
    if not topo_want.get('gpu_pair_link') and not topo_want.get('pairs'):
        _not_asked(run, ['gpu.topology'])
    if not topo_want.get('nic_link'):
        _not_asked(run, ['gpu.nic_affinity'])
    if not topo_want.get('gpu_pair_link') and not topo_want.get('pairs') and not topo_want.get('nic_link'):
        return
    topo = gpu.get('topology')
    matrix = topo.get('matrix') if isinstance(topo, dict) else None
    if not isinstance(matrix, dict):
        run.unknown(['nvidia_topo'], 'gpu topology', 'GPU interconnect (nvidia-smi topo -m)', checks=('gpu.topology', 'gpu.nic_affinity'))
        return
    indexes = [d.get('index', i) for i, d in enumerate(devices)]
    pairs = topo_want.get('pairs') or {}
    for a_pos, a in enumerate(indexes):
        for b in indexes[a_pos + 1:]:
            expected = pairs.get('%s-%s' % (a, b)) or pairs.get('%s-%s' % (b, a)) or topo_want.get('gpu_pair_link')
            if not expected:
                continue
            measured = (matrix.get('GPU%s' % a) or {}).get('GPU%s' % b) or (matrix.get('GPU%s' % b) or {}).get('GPU%s' % a)
            if not link_at_least(measured, expected):
                run.add('gpu.topology', 'gpu%s<->gpu%s' % (a, b), measured, expected,
                        'gpu%s<->gpu%s connection is %s, profile wants %s' % (a, b, measured or 'absent', expected), index=a)
    nic_want = topo_want.get('nic_link')
    if nic_want:
        for a in indexes:
            row = matrix.get('GPU%s' % a) or {}
            nics = dict((k, v) for k, v in row.items() if str(k).upper().startswith('NIC') or str(k).startswith('mlx'))
            best = max(nics.values(), key=_link_score) if nics else None
            if not link_at_least(best, nic_want):
                names = topo.get('nic_names') or {}
                nearest = [names.get(k, k) for k, v in sorted(nics.items()) if v == best]
                run.add('gpu.nic_affinity', 'gpu%s' % a, best or 'no NIC', nic_want,
                        'gpu%s reaches its nearest NIC%s over %s, profile wants %s or better'
                        % (a, ' (%s)' % ', '.join(nearest) if nearest else '', best or 'nothing (no NIC in nvidia-smi topo -m)',
                           nic_want), index=a)


def _check_nvlink(run, want, gpu, devices):
    nv_want = want.get('nvlink')
    if not nv_want or not nv_want.get('links_per_gpu'):
        _not_asked(run, NVLINK_CHECKS)
        return
    if nv_want.get('speed_gbps_min') is None:
        _not_asked(run, ['gpu.nvlink_speed'])
    nvlink = gpu.get('nvlink')
    if not isinstance(nvlink, dict):
        run.unknown(['nvidia_nvlink'], 'gpu nvlink', 'NVLink status (nvidia-smi nvlink --status)', checks=NVLINK_CHECKS)
        return
    expected = nv_want['links_per_gpu']
    speed_min = nv_want.get('speed_gbps_min')
    for i, dev in enumerate(devices):
        index = dev.get('index', i)
        entry = nvlink.get(str(index)) or {}
        links = [link for link in (entry.get('links') or []) if isinstance(link, dict)]
        active = [link for link in links if link.get('active') is True]
        name = 'gpu%s' % index
        if entry.get('all_inactive') is True and not active:
            run.add('gpu.nvlink_down', name, 'all links inactive', '%d active' % expected,
                    '%s: nvidia-smi reports that all its NVLinks are inactive ("NVML: Unable to retrieve NVLink '
                    'information as all links are inActive")' % name, index=index)
            continue
        if len(links) < expected and not entry.get('parse_error'):
            run.add('gpu.nvlink_count', name, len(links), expected,
                    '%s: nvidia-smi lists %d NVLink(s), profile wants %d active' % (name, len(links), expected), index=index)
        if len(active) < expected:
            for link in links:
                if link.get('active') is not True:
                    run.add('gpu.nvlink_down', '%s/nvlink%s' % (name, link.get('link')), 'inactive', 'active',
                            '%s NVLink %s is inactive (%d of %d links active)' % (name, link.get('link'), len(active), expected),
                            index=index)
        if speed_min is not None:
            for link in active:
                speed = _num(link.get('speed_gbps'))
                comp = '%s/nvlink%s' % (name, link.get('link'))
                if speed is None:
                    run.not_measured(comp, 'NVLink speed', 'nvidia-smi nvlink --status -i %s' % index, checks=('gpu.nvlink_speed',))
                elif speed < speed_min:
                    run.add('gpu.nvlink_speed', comp, speed, speed_min,
                            '%s runs at %s GB/s, profile wants at least %s GB/s' % (comp, speed, speed_min), index=index)


def _check_nvlink_errors(run, want, gpu, devices):
    bounds = (want.get('nvlink') or {}).get('errors_max')
    if not bounds:
        _not_asked(run, ['gpu.nvlink_errors'])
        return
    errors = gpu.get('nvlink_errors')
    if not isinstance(errors, dict):
        run.unknown(['nvidia_nvlink_errors'], 'gpu nvlink errors', 'NVLink error counters (nvidia-smi nvlink -e)',
                    checks=('gpu.nvlink_errors',))
        return
    for i, dev in enumerate(devices):
        index = dev.get('index', i)
        links = (errors.get(str(index)) or {}).get('links') or {}
        for link in sorted(links, key=lambda name: int(name) if str(name).isdigit() else 1 << 20):
            counters = links[link] if isinstance(links[link], dict) else {}
            over = ['%s=%d (max %d)' % (name, counters[name], bounds[name]) for name in sorted(bounds)
                    if isinstance(_num(counters.get(name)), (int, float)) and counters[name] > bounds[name]]
            if over:
                comp = 'gpu%s/nvlink%s' % (index, link)
                run.add('gpu.nvlink_errors', comp, ', '.join(over), 'counters within gpu.nvlink.errors_max',
                        '%s error counters: %s' % (comp, ', '.join(over)), index=index)


def _check_xid(run, want, gpu, devices):
    if 'xid_events' not in gpu or gpu.get('xid_events') is None:
        run.unknown(['kernel_log'], 'gpu xid', 'Xid events in the kernel log', checks=('gpu.xid', 'gpu.xid_fatal'))
        return
    xid_want = want['xid']
    fatal = dict((e['xid'], e) for e in xid_want['fatal'])
    known = dict((e['xid'], e) for e in xid_want['warn'])
    ignore = set(xid_want['ignore'])
    by_bus = {}
    for i, dev in enumerate(devices):
        bus = _norm_bus(dev.get('bus_id'))
        if bus is not None:
            by_bus[bus] = (dev.get('index', i), dev.get('bus_id'))
    groups = {}
    order = []
    for event in gpu.get('xid_events') or []:
        if not isinstance(event, dict):
            continue
        xid = event.get('xid')
        if not isinstance(xid, int) or xid in ignore:
            continue
        bus = _norm_bus(event.get('pci'))
        if bus in by_bus:
            index, bus_id = by_bus[bus]
            component = 'gpu%s' % index
            where = '%s (%s)' % (component, bus_id)
        else:
            index = None
            component = 'pci %s' % (event.get('pci') or 'unknown')
            where = component + ' (not a GPU of nvidia-smi: it may have fallen off the bus)'
        key = (component, xid)
        if key not in groups:
            groups[key] = {'count': 0, 'event': event, 'where': where, 'index': index}
            order.append(key)
        groups[key]['count'] += 1
    for key in order:
        component, xid = key
        info = groups[key]
        entry = fatal.get(xid) or known.get(xid)
        reason = entry['reason'] if entry else 'Xid %d' % xid
        line = info['event'].get('line') or info['event'].get('message') or ''
        message = '%s logged Xid %d (%s) %d time(s) since boot: %s' % (info['where'], xid, reason, info['count'], line)
        ctx = {'xid': xid, 'index': info['index'] if info['index'] is not None else '<index>'}
        if entry and entry.get('remediation'):
            ctx['remediation'] = entry['remediation']
        check = 'gpu.xid_fatal' if xid in fatal else 'gpu.xid'
        run.add(check, component, 'Xid %d x%d' % (xid, info['count']), 'no Xid %d' % xid, message, **ctx)
