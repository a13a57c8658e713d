# -*- coding: utf-8 -*-
# Copyright: (c) 2026, xuanwu.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks: node facts (docs/facts.md) + a hardware profile (docs/profiles.md) -> findings.

Findings have the shape of ``_findings.make``. ``check_node`` checks one host against a normalised
profile, ``check_group`` compares hosts with each other; ``_judge`` validates the profile once and
applies the site overrides. Pure: no I/O.

Absent facts are never a pass for a required item: a tool that is not installed where the profile
needs its hardware fails (``gpu.driver_missing``, ``ib.tools_missing``, ...); a probe that failed or
could not be parsed fails through ``probe.*``; facts that were not collected (probe skipped) give an
info finding (``facts.not_collected``); a value the tool did not report warns (``facts.not_measured``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import re

from ansible_collections.xuanwu.cluster.plugins.module_utils import _findings, _hygiene, _links, _probe
from ansible_collections.xuanwu.cluster.plugins.module_utils._parse_nvidia import PCIE_LINK_RANK


def _c(title, kind, severity, compares, remediation):
    return _findings.entry(title, severity, remediation, kind=kind, compares=compares)


# Remediation texts may name {placeholders}; a finding fills them in, the docs show <placeholder>.
CHECKS = {
    # --- probes and facts ------------------------------------------------------------------
    'probe.failed': _c(
        'A probe command failed', 'probe <name>', 'fail',
        'probes[name].status == failed (fail where the profile needs its facts, warn otherwise)',
        'Run `{command}` on the node by hand and fix what it reports (exit code {rc}). For nvidia-smi "couldn\'t communicate '
        'with the NVIDIA driver": load the driver (modprobe nvidia; check dmesg, DKMS build for the running kernel, Secure '
        'Boot signing). Re-run the validation afterwards.'),
    'probe.parse_error': _c(
        'A probe printed output the parser does not understand', 'probe <name>', 'fail',
        'probes[name].status == parse_error (fail where the profile needs its facts, warn otherwise)',
        'Run `{command}` on the node and compare with the excerpt in the finding. If the tool prints something new (other '
        'version), capture a bundle (playbooks/capture.yml) and open an issue with it; otherwise fix the tool installation. '
        'On a replayed capture bundle whose file could not be read (the finding names the file and why: a link, not a '
        'regular file, too large), capture the bundle again.'),
    'probe.section_parse_error': _c(
        'Part of a probe\'s output not understood', 'probe <name>: <section>', 'fail',
        'probes[name].section_errors is empty (fail where the profile needs its facts, warn otherwise); the other '
        'sections of the output are still checked',
        'Run `{command}` on the node and read the part about {section} (quoted in the finding). A section the tool prints '
        'in a new shape: capture a bundle (playbooks/capture.yml) and open an issue with it; an error printed in its place '
        'names the fault of that component.'),
    'facts.not_collected': _c(
        'Facts the profile needs were not collected', '<section>', 'info',
        'profile requires a section whose probe was skipped or absent from the capture bundle',
        'Run the validation with the probe group enabled (or capture a bundle that includes `{probe}`) to check this item.'),
    'facts.not_measured': _c(
        'A value the profile requires was not reported', '<component>', 'warn',
        'profile requires a value that the tool reported as N/A or not at all',
        'Check by hand on the node: {how}. Newer drivers/tools report it; otherwise confirm it manually.'),
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
    'gpu.xid_fatal': _c(
        'Fatal Xid in the kernel log', 'gpu<N>', 'fail', 'gpu.xid_events has no Xid of gpu.xid.fatal',
        'Drain the node; collect `nvidia-bug-report.sh`; reset the GPU or reboot; run `dcgmi diag -r 3`; open an RMA with '
        'the GPU serial if it repeats. See NVIDIA\'s Xid catalog for Xid {xid}.'),
    'gpu.xid': _c(
        'Other Xid in the kernel log', 'gpu<N>', 'warn', 'gpu.xid_events has no Xid outside gpu.xid.ignore',
        'Look up Xid {xid} in NVIDIA\'s Xid catalog; application-level Xids (13, 31, 43, 45) need the job owner, others a '
        'GPU reset; escalate if it repeats without a job running.'),
    # --- InfiniBand -----------------------------------------------------------------------
    'ib.tools_missing': _c(
        'InfiniBand tools not installed', 'ibstat', 'fail', 'infiniband.installed is false while ports are required',
        'Install the RDMA userspace (infiniband-diags and rdma-core, or DOCA-OFED/MLNX_OFED) and load the HCA driver '
        '(mlx5_ib); check `ibstat`.'),
    'ib.port_count': _c(
        'Usable InfiniBand ports', 'infiniband', 'fail',
        'ports with the link layer, state, physical state and rate of the profile >= infiniband.ports_min',
        'Run `ibstat` and `ibv_devinfo`; for each port that is down see the port findings: check the cable and '
        'transceiver, the switch port, that the subnet manager runs (`sminfo`), and the HCA firmware (`mlxfwmanager`).'),
    'ib.port_state': _c(
        'InfiniBand port not up', '<ca>/<port>', 'fail',
        'port state == infiniband.state and physical_state == infiniband.physical_state',
        'Polling/Down: reseat or replace the cable/transceiver, check the switch port; Initializing/Armed: no subnet '
        'manager has configured the port (check opensm/UFM, `sminfo`). Then `ibstat {ca} {port}`.'),
    'ib.port_rate': _c(
        'InfiniBand port below the rate', '<ca>/<port>', 'fail', 'port rate_gbps >= infiniband.rate_gbps_min',
        'The link trained at a lower rate: check `ibstat {ca} {port}` and `mlxlink -d {ca} -p {port}`; replace the '
        'cable/transceiver, check the switch port speed configuration and HCA firmware.'),
    'ib.link_layer': _c(
        'InfiniBand port in the wrong link layer', '<ca>/<port>', 'fail',
        'enough ports have link_layer == infiniband.link_layer',
        'Set the port protocol: `mlxconfig -d {ca} set LINK_TYPE_P{port}=1` (InfiniBand) or `=2` (Ethernet), then reboot '
        'or reset the firmware (`mlxfwreset`).'),
    'ib.ca_type': _c(
        'HCA model', '<ca>', 'fail', 'CA type == infiniband.ca_type',
        'The node has a different HCA model than its profile: assign the right profile or fix the hardware inventory.'),
    'ib.port_counters': _c(
        'InfiniBand port error counters', '<ca>/<port>', 'warn', 'port counters <= infiniband.counters_max',
        'Rising symbol errors / link downs point at the cable or transceiver: check `mlxlink -d {ca} -p {port} -c` (BER), '
        'replace the cable; reset counters with `perfquery -x -R` and re-check after a load test.'),
    # --- network --------------------------------------------------------------------------
    'network.interface_missing': _c(
        'Network interface missing', '<interface>', 'fail', 'an interface matches each required name/glob',
        'Check `ip -d link show` and the driver (`ethtool -i`, dmesg); check udev/netplan naming.'),
    'network.mtu': _c(
        'Interface MTU', '<interface>', 'fail', 'interface mtu == network.interfaces[].mtu',
        'Set the MTU in the network configuration (netplan/NetworkManager/ifcfg) and apply it: `ip link set {component} '
        'mtu {expected}`; the switch ports must allow it too.'),
    'network.link': _c(
        'Interface link down', '<interface>', 'fail', 'link_detected is true and operstate is UP',
        'Check `ethtool {component}` and `ip link show {component}`: cable, transceiver, switch port; bring the interface up.'),
    'network.speed': _c(
        'Interface speed', '<interface>', 'fail', 'ethtool speed_mbps >= network.interfaces[].speed_mbps_min',
        'Check `ethtool {component}`: replace the cable/transceiver, check switch port speed and auto-negotiation.'),
    'network.roce_pfc': _c(
        'RoCE PFC priority', '<interface>', 'fail', 'network.roce.pfc_priority is in pfc.enabled_priorities',
        'Enable PFC on the priority: `mlnx_qos -i {component} --pfc <mask>` or `dcb pfc set dev {component} '
        'prio-pfc {priority}:on`; the switch must match.'),
    'network.roce_ecn': _c(
        'RoCE ECN', '<interface>', 'fail', 'ECN roce_np and roce_rp are enabled on network.roce.pfc_priority',
        'Enable ECN: `echo 1 > /sys/class/net/{component}/ecn/roce_np/enable/{priority}` and the same for roce_rp '
        '(persist it with the vendor QoS tooling).'),
    'network.roce_trust': _c(
        'RoCE trust mode', '<interface>', 'fail', 'QoS trust mode == network.roce.trust',
        'Set the trust mode: `mlnx_qos -i {component} --trust {expected}`.'),
    # --- host -----------------------------------------------------------------------------
    'host.os': _c(
        'Operating system', 'host', 'fail', 'os-release ID (and VERSION_ID prefix) is allowed by host.os',
        'Reinstall the node with a supported OS or extend host.os in the profile if the OS was validated.'),
    'host.kernel_module': _c(
        'Kernel module not loaded', 'module <name>', 'fail', 'module is in /proc/modules',
        'Load it: `modprobe {module}` and persist it (/etc/modules-load.d/); if it is missing, install its package '
        '(nvidia_peermem ships with the NVIDIA driver, ib_* with rdma-core/DOCA-OFED) and rebuild DKMS for the kernel.'),
    'host.chrony_missing': _c(
        'chrony not installed', 'chrony', 'fail', 'chronyc is present while time sync is required',
        'Install and enable chrony (`apt-get install chrony` / `dnf install chrony`; `systemctl enable --now chronyd`), '
        'configure the site NTP servers.'),
    'host.time_sync': _c(
        'Clock not synchronised', 'chrony', 'fail', 'chronyc tracking: leap status Normal with a reference',
        'Check `chronyc sources -v` and `chronyc tracking`: reachable NTP servers (UDP 123 through the firewall), '
        '`systemctl restart chronyd`, then `chronyc makestep`.'),
    'host.time_offset': _c(
        'Clock offset', 'chrony', 'fail', '|offset| <= host.time.max_offset_ms',
        'Step the clock with `chronyc makestep` and check the NTP sources (`chronyc sources -v`).'),
    'host.memlock': _c(
        'Locked-memory limit', 'host', 'fail', 'ulimit -l is unlimited',
        'Set "* soft memlock unlimited" and "* hard memlock unlimited" in /etc/security/limits.d/, LimitMEMLOCK=infinity '
        'for systemd services and the batch scheduler (e.g. slurmd), then log in again.'),
    'host.disk_free': _c(
        'Free disk space', 'disk <path>', 'fail', 'free bytes at the path >= min_free_gb * 10^9',
        'Free space on {path}: `du -xh {path} | sort -h | tail`, clean caches/containers/old checkpoints (e.g. '
        '`docker system prune`), or grow the filesystem.'),
    'host.port_in_use': _c(
        'Port already in use', 'port <n>/<proto>', 'fail', 'nothing listens on the ports of host.ports_must_be_free',
        'Find the owner with `ss -lntup | grep :{port}` and stop it (a stale training job or rendezvous store), or change '
        'the job\'s MASTER_PORT.'),
    # --- link flaps (field guide 8) ---------------------------------------------------------
    'network.link_flaps': _c(
        'Interface link flaps', '<interface>', 'fail',
        'link down events of the interface in the kernel log since boot <= host.link_flaps.down_events_max',
        'The link of {interface} went down and came back (network jitter stalls collectives and makes NCCL time out): '
        'read the lines with `journalctl -k | grep {interface}`, check the cable/transceiver (`ethtool -m {interface}`, '
        '`mlxlink -d <device> -c` on ConnectX), the switch port\'s flap log and error counters, and `ethtool -S {interface} '
        '| grep -i -e err -e down`; replace the cable or optic, move to another switch port, update the NIC firmware. '
        'After the fix the count restarts only at the next boot: raise down_events_max for this host until then.'),
    # --- hygiene before a job (field guide 7.5) ---------------------------------------------
    'gpu.compute_mode': _c(
        'GPU compute mode', 'gpu<N>', 'fail', 'devices[].compute_mode is one of gpu.compute_modes',
        'Set the GPU back to the shared mode: `nvidia-smi -i {index} -c DEFAULT` (as root; it lasts until the driver '
        'reloads, so also fix what set it: a boot script, the scheduler\'s GPU plugin). Exclusive_Process lets one process '
        'use the GPU, so a multi-process job fails with "CUDA-capable device(s) is/are busy or unavailable"; Prohibited lets '
        'none. If the site runs one process per GPU on purpose, list the mode in gpu.compute_modes.'),
    'gpu.process': _c(
        'GPU in use before the job', 'gpu<N>', 'fail',
        'nvidia-smi -q -x lists no process on the GPU (gpu.idle_required), outside gpu.idle_ignore_processes',
        'A process still holds the GPU (memory and compute): look at it with `ps -o pid,ppid,user,etimes,args -p {pid}` and '
        '`nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv`; stop it (`kill {pid}`, '
        'then `kill -9 {pid}`) once its owner agrees, or drain the node in the scheduler until it ends. A monitoring agent '
        'that must stay goes into gpu.idle_ignore_processes.'),
    'host.leftover_process': _c(
        'Process of an earlier job still running', 'pid <N>', 'fail',
        'no process of ps matches host.leftover_process_patterns',
        'A distributed-job process (launcher, MPI daemon, benchmark) outlived its job: check it with '
        '`ps -o pid,ppid,user,etimes,args -p {pid}` and its children with `ps --ppid {pid} -o pid,args`, stop it with '
        '`kill {pid}` (`pkill -P {pid}` for the children, then `kill -9`), and fix the job cleanup (scheduler epilog, '
        'torchrun --max-restarts, mpirun timeouts) so the next job does not inherit its ports and GPUs.'),
    'host.pcie_acs': _c(
        'PCIe ACS enabled', 'pcie acs', 'fail', 'no PCIe bridge has ACS source validation/redirection enabled',
        'Disable ACS in the BIOS (or at boot with `setpci -s <bridge> ECAP_ACS+0x6.w=0000` for every bridge listed) so '
        'GPUDirect P2P/RDMA does not route through the root complex; keep it on only where virtualisation needs it.'),
    # --- software -------------------------------------------------------------------------
    'software.driver_version': _c(
        'NVIDIA driver version', 'nvidia driver', 'fail',
        'software.driver_version matches profile software.driver_version / >= driver_version_min',
        'Install the driver branch of the profile (the same on every node) and reboot; keep Fabric Manager at the same '
        'version on NVSwitch systems.'),
    'software.cuda_driver_version': _c(
        'CUDA version supported by the driver', 'nvidia driver', 'fail',
        'software.cuda_driver_version >= software.cuda_driver_version_min',
        'Upgrade the NVIDIA driver to a branch that supports CUDA {expected} (see the CUDA release notes\' driver table).'),
    'software.cuda_toolkit_version': _c(
        'CUDA toolkit version', 'cuda toolkit', 'fail',
        'software.cuda_toolkit_version matches / >= the profile',
        'Install the CUDA toolkit version of the profile (cuda-toolkit-<major>-<minor>) and put its nvcc on PATH, or fix the '
        'container image.'),
    'software.nccl_version': _c(
        'NCCL version', 'nccl', 'fail', 'software.nccl_version matches / >= the profile',
        'Install the NCCL version of the profile (libnccl2 / nccl package, or the framework wheel that bundles it) on every '
        'node: mixed NCCL versions across ranks are unsupported.'),
    # --- across hosts ---------------------------------------------------------------------
    'consistency.software.driver_version': _c(
        'Driver version differs from the other hosts', 'host', 'fail', 'software.driver_version equals the majority',
        'Align the NVIDIA driver with the rest of the cluster ({expected}): install that version (with the same Fabric '
        'Manager version) and reboot. Ranks on different drivers can hang NCCL jobs.'),
    'consistency.software.nccl_version': _c(
        'NCCL version differs from the other hosts', 'host', 'fail', 'software.nccl_version equals the majority',
        'Install NCCL {expected} like the other hosts: ranks with different NCCL versions can hang or fail.'),
    'consistency.software.cuda_toolkit_version': _c(
        'CUDA toolkit differs from the other hosts', 'host', 'warn', 'software.cuda_toolkit_version equals the majority',
        'Install CUDA toolkit {expected} like the other hosts.'),
    'consistency.host.kernel.release': _c(
        'Kernel differs from the other hosts', 'host', 'warn', 'host.kernel.release equals the majority',
        'Boot kernel {expected} like the other hosts (rebuild DKMS modules for it).'),
}

DEFAULT_GROUP_KEYS = ('software.driver_version', 'software.nccl_version', 'software.cuda_toolkit_version', 'host.kernel.release')

# ``consistency.<key>`` for a fact key without its own entry above (evaluate_group's ``keys``).
CONSISTENCY_DEFAULT = _c(
    'A fact differs from the other hosts', '<key>', 'warn', 'the value of <key> is the one most hosts have',
    'Align {key} with the other hosts ({expected}).')


def _entry(check):
    return CHECKS.get(check) or (CONSISTENCY_DEFAULT if check.startswith('consistency.') else CHECKS[check])


def render_remediation(check, context=None):
    """The remediation text of ``check`` with ``{placeholders}`` filled from ``context``."""
    return _findings.render(_entry(check)['remediation'], context)


# ---------------------------------------------------------------------------------------------
# Small helpers.

def _get(data, dotted, default=None):
    cur = data
    for part in dotted.split('.'):
        if not isinstance(cur, dict) or part not in cur:
            return default
        cur = cur[part]
    return cur


def _num(value):
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def version_tuple(text):
    """'580.159.04' -> (580, 159, 4); ignores non-numeric parts ('12.4.r12.4' -> (12, 4, 12, 4))."""
    return tuple(int(p) for p in re.findall(r'[0-9]+', str(text)))


def version_at_least(value, minimum):
    have, want = list(version_tuple(value)), list(version_tuple(minimum))
    size = max(len(have), len(want))
    return have + [0] * (size - len(have)) >= want + [0] * (size - len(want))


def version_matches(value, pattern):
    """Exact, component prefix ("580" / "580." match "580.159.04") or glob ("580.*")."""
    value, pattern = str(value).strip(), str(pattern).strip()
    if any(c in pattern for c in '*?['):
        return fnmatch.fnmatchcase(value, pattern)
    want = [p for p in re.split(r'[.\-+]', pattern.rstrip('.')) if p != '']
    have = [p for p in re.split(r'[.\-+]', value) if p != '']
    if len(have) < len(want):
        return False
    for a, b in zip(have, want):
        if a != b and not (a.isdigit() and b.isdigit() and int(a) == int(b)):
            return False
    return True


def _link_score(link):
    if not isinstance(link, str):
        return -1
    link = link.strip().upper()
    match = re.match(r'^NV([0-9]+)$', link)
    if match:
        return 100 + int(match.group(1))
    if link == 'SOC':        # older nvidia-smi name of SYS
        link = 'SYS'
    if link in PCIE_LINK_RANK:
        return len(PCIE_LINK_RANK) - PCIE_LINK_RANK.index(link)
    return -1


def link_at_least(measured, expected):
    """True when topology link ``measured`` is as good as ``expected`` (NV18 >= NV12 > PIX > ... > SYS)."""
    want = _link_score(expected)
    have = _link_score(measured)
    return have >= want >= 0


def _norm_bus(bus):
    """'00000000:18:00.0' / '0000:18:00' -> (0, 0x18, 0); None when not a PCI address."""
    if not isinstance(bus, str):
        return None
    match = re.search(r'(?:([0-9a-fA-F]+):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})(?:\.[0-7])?\s*$', bus.strip())
    if not match:
        return None
    return (int(match.group(1) or '0', 16), int(match.group(2), 16), int(match.group(3), 16))


# ---------------------------------------------------------------------------------------------
# The run.

class _Run(object):
    def __init__(self, facts, profile, host):
        self.facts = facts if isinstance(facts, dict) else {}
        self.profile = profile
        self.host = host
        self.findings = []
        self._seen = set()

    def status(self, key):
        probes = self.facts.get('probes')
        record = probes.get(key) if isinstance(probes, dict) else None
        return record.get('status') if isinstance(record, dict) else None

    def statuses(self, prefix):
        probes = self.facts.get('probes')
        if not isinstance(probes, dict):
            return []
        return [rec.get('status') for key, rec in probes.items()
                if isinstance(rec, dict) and (key == prefix or key.startswith(prefix + ':'))]

    def add(self, check, component, measured, expected, message, severity=None, **context):
        key = (check, component, str(measured), str(expected))
        if key in self._seen:
            return
        self._seen.add(key)
        context.setdefault('component', component)
        context.setdefault('expected', expected)
        context.setdefault('measured', measured)
        self.findings.append(_findings.make(CHECKS, self.host, check, component, measured, expected, message,
                                            severity=severity, remediation=context.pop('remediation', None),
                                            context=context))

    def unknown(self, probes, component, what):
        """Facts for ``what`` are absent: stay silent when a probe finding explains it, else say so (info)."""
        states = []
        for probe in probes:
            states.extend(self.statuses(probe))
        if any(s in ('failed', 'parse_error') for s in states):
            return
        if any(s == 'missing' for s in states):
            self.add('facts.not_measured', component, 'tool not installed', what,
                     '%s: cannot check %s, `%s` is not installed' % (component, what, probes[0]),
                     how='install the tool of probe %s' % probes[0])
            return
        self.add('facts.not_collected', component, 'not collected', what,
                 '%s: not checked (%s): probe %s did not run' % (component, what, '/'.join(probes)), probe=probes[0])

    def not_measured(self, component, what, how):
        self.add('facts.not_measured', component, None, what,
                 '%s: %s was not reported; the profile requires it' % (component, what), how=how)


# ---------------------------------------------------------------------------------------------
# Probe statuses.

def _check_probes(run):
    probes = run.facts.get('probes')
    if not isinstance(probes, dict):
        return
    wanted = set(name for name in ('gpu', 'infiniband', 'network', 'host', 'software') if run.profile.get(name))
    for key in sorted(probes):
        record = probes[key]
        if not isinstance(record, dict):
            continue
        status = record.get('status')
        if status not in ('failed', 'parse_error'):
            continue
        if status == 'failed' and 'gpu' in wanted and key.startswith('nvidia_') and _nvml_mismatch(run.facts.get('gpu') or {}):
            continue    # nvidia-smi cannot start NVML: gpu.driver_library_mismatch names the cause once
        sections = _probe.FEEDS.get(key.split(':', 1)[0])
        relevant = sections is None or bool(wanted.intersection(sections))
        check = 'probe.failed' if status == 'failed' else 'probe.parse_error'
        error = record.get('error') or ('exit code %s' % record.get('rc'))
        excerpt = record.get('excerpt')
        what = 'failed' if status == 'failed' else 'output not understood'
        message = 'probe %s (`%s`) %s: %s' % (key, record.get('command'), what, error)
        if excerpt:
            message += '\n--- output excerpt ---\n%s' % excerpt
        run.add(check, 'probe %s' % key, status, 'ok', message, severity='fail' if relevant else 'warn',
                command=record.get('command') or key, rc=record.get('rc'))
    for key in sorted(probes):
        record = probes[key]
        problems = record.get('section_errors') if isinstance(record, dict) else None
        if not isinstance(problems, list) or record.get('status') != 'ok':
            continue
        sections = _probe.FEEDS.get(key.split(':', 1)[0])
        relevant = sections is None or bool(wanted.intersection(sections))
        for problem in problems:
            if not isinstance(problem, dict):
                continue
            section = str(problem.get('section'))
            message = 'probe %s (`%s`): the part about %s was not understood: %s' % (
                key, record.get('command'), section, problem.get('error'))
            if problem.get('excerpt'):
                message += '\n--- what was read ---\n%s' % problem['excerpt']
            run.add('probe.section_parse_error', 'probe %s: %s' % (key, section), 'not understood', 'ok', message,
                    severity='fail' if relevant else 'warn', command=record.get('command') or key, section=section)


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


def _check_gpu(run):
    want = run.profile.get('gpu')
    if not want:
        return
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    status = run.status('nvidia_query_gpu')
    devices = [d for d in (gpu.get('devices') or []) if isinstance(d, dict)]
    if gpu.get('installed') is False or (status == 'missing' and not devices):
        if want['count'] > 0:
            run.add('gpu.driver_missing', 'nvidia-smi', 'not installed', '%d GPU(s)' % want['count'],
                    'nvidia-smi is not installed: no NVIDIA driver on a node whose profile wants %d GPU(s)' % want['count'])
        return
    _check_driver_sources(run, gpu, devices)
    if not devices and gpu.get('count') is None:
        run.unknown(['nvidia_query_gpu'], 'gpu', 'the GPUs')
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
    _check_xid(run, want, gpu, devices)


def _nvml_mismatch(gpu):
    error = gpu.get('nvml_error') if isinstance(gpu, dict) else None
    return isinstance(error, dict) and 'version mismatch' in str(error.get('message')).lower()


def _check_driver_sources(run, gpu, devices):
    """The driver as its kernel module reports it, as NVML reports it, and as each GPU reports it."""
    module = gpu.get('kernel_module') if isinstance(gpu.get('kernel_module'), dict) else {}
    module_version = module.get('version')
    if _nvml_mismatch(gpu):
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
        run.unknown(['nvidia_proc_version'], 'nvidia driver', 'the loaded kernel module\'s version (/proc/driver/nvidia/version)')
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
    if want.get('model'):
        model = dev.get('name')
        if model is None:
            run.not_measured(name, 'GPU model', 'nvidia-smi -L')
        elif want['model'].lower() not in str(model).lower():
            run.add('gpu.model', name, model, want['model'], '%s is a %s, profile wants %s' % (label, model, want['model']), **ctx)
    if want.get('memory_mib_min') is not None:
        mem = _num(dev.get('memory_total_mib'))
        if mem is None:
            run.not_measured(name, 'memory size', 'nvidia-smi -q -d MEMORY')
        elif mem < want['memory_mib_min']:
            run.add('gpu.memory', name, int(mem), want['memory_mib_min'],
                    '%s has %d MiB, profile wants at least %d MiB' % (label, mem, want['memory_mib_min']), **ctx)
    _check_pcie(run, want['pcie'], dev, name, label, ctx)
    if want['persistence_mode_required']:
        mode = dev.get('persistence_mode')
        if mode is None:
            run.not_measured(name, 'persistence mode', 'nvidia-smi -q | grep Persistence')
        elif mode is not True:
            run.add('gpu.persistence_mode', name, False, True, '%s: persistence mode is off' % label, **ctx)
    if want['ecc_required']:
        mode = dev.get('ecc_mode')
        if mode is None:
            run.not_measured(name, 'ECC mode', 'nvidia-smi -q -d ECC')
        elif mode is not True:
            run.add('gpu.ecc_mode', name, False, True, '%s: ECC is disabled' % label, **ctx)
    _check_gpu_health(run, want, dev, name, label, ctx)


def _check_pcie(run, want, dev, name, label, ctx):
    gen_cur, gen_max = _num(dev.get('pcie_gen_current')), _num(dev.get('pcie_gen_max'))
    width_cur, width_max = _num(dev.get('pcie_width_current')), _num(dev.get('pcie_width_max'))
    # As measured: the current generation and width, then the most the link can reach.
    measured = 'Gen%s x%s (max Gen%s x%s)' % (_int(gen_cur), _int(width_cur), _int(gen_max), _int(width_max))
    problems = []
    if want.get('gen_min') is not None:
        gen = gen_max if gen_max is not None else gen_cur
        if gen is None:
            run.not_measured(name, 'PCIe generation', 'nvidia-smi -q -d PCI')
        elif gen < want['gen_min']:
            problems.append('Gen%d (max the link can reach), profile wants Gen%d' % (gen, want['gen_min']))
    if want.get('width_min') is not None:
        if width_cur is None:
            run.not_measured(name, 'PCIe width', 'nvidia-smi -q -d PCI')
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
    ecc = dev.get('ecc_errors')
    limits = want['ecc_errors']
    if isinstance(ecc, dict):
        bad = []
        for scope in ('volatile', 'aggregate'):
            limit = limits.get('%s_uncorrectable_max' % scope)
            total = _sum_counters(ecc.get(scope), uncorrectable=True)
            if limit is not None and total is not None and total > limit:
                bad.append('%s %s > %s' % (scope, total, limit))
        if bad:
            run.add('gpu.ecc_uncorrectable', name, '; '.join(bad), 'uncorrectable <= %s' % limits.get('volatile_uncorrectable_max'),
                    '%s has uncorrectable ECC errors: %s' % (label, '; '.join(bad)), **ctx)
        warn = []
        for scope in ('volatile', 'aggregate'):
            limit = limits.get('%s_correctable_warn_above' % scope)
            total = _sum_counters(ecc.get(scope), uncorrectable=False)
            if limit is not None and total is not None and total > limit:
                warn.append('%s %s > %s' % (scope, total, limit))
        if warn:
            run.add('gpu.ecc_correctable', name, '; '.join(warn), 'correctable within the thresholds',
                    '%s has many correctable ECC errors: %s' % (label, '; '.join(warn)), **ctx)
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


def _check_topology(run, want, gpu, devices):
    topo_want = want.get('topology')
    if not topo_want or (not topo_want.get('gpu_pair_link') and not topo_want.get('pairs') and not topo_want.get('nic_link')):
        return
    topo = gpu.get('topology')
    matrix = topo.get('matrix') if isinstance(topo, dict) else None
    if not isinstance(matrix, dict):
        run.unknown(['nvidia_topo'], 'gpu topology', 'GPU interconnect (nvidia-smi topo -m)')
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
        return
    nvlink = gpu.get('nvlink')
    if not isinstance(nvlink, dict):
        run.unknown(['nvidia_nvlink'], 'gpu nvlink', 'NVLink status (nvidia-smi nvlink --status)')
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
                    run.not_measured(comp, 'NVLink speed', 'nvidia-smi nvlink --status -i %s' % index)
                elif speed < speed_min:
                    run.add('gpu.nvlink_speed', comp, speed, speed_min,
                            '%s runs at %s GB/s, profile wants at least %s GB/s' % (comp, speed, speed_min), index=index)


def _check_xid(run, want, gpu, devices):
    if 'xid_events' not in gpu or gpu.get('xid_events') is None:
        run.unknown(['kernel_log'], 'gpu xid', 'Xid events in the kernel log')
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


# ---------------------------------------------------------------------------------------------
# InfiniBand.

def _port_sort_key(port):
    return (0, int(port)) if str(port).isdigit() else (1, str(port))


def _check_infiniband(run):
    want = run.profile.get('infiniband')
    if not want:
        return
    ib = run.facts.get('infiniband') if isinstance(run.facts.get('infiniband'), dict) else {}
    status = run.status('ibstat')
    cas = ib.get('cas') if isinstance(ib.get('cas'), dict) else {}
    if ib.get('installed') is False or (status == 'missing' and not cas):
        if want['ports_min'] > 0:
            run.add('ib.tools_missing', 'ibstat', 'not installed', '%d port(s)' % want['ports_min'],
                    'ibstat is not installed: cannot see the %d InfiniBand port(s) the profile wants' % want['ports_min'])
        return
    if not cas and ib.get('installed') is not True and status != 'ok':
        run.unknown(['ibstat'], 'infiniband', 'InfiniBand ports')
        return
    usable, short, other_layer, counted = [], [], [], 0
    counters_seen = False
    for ca in sorted(cas):
        if not any(fnmatch.fnmatchcase(ca, pattern) for pattern in want['ca_names']):
            continue
        info = cas[ca] if isinstance(cas[ca], dict) else {}
        if want.get('ca_type') and info.get('ca_type') != want['ca_type']:
            run.add('ib.ca_type', ca, info.get('ca_type'), want['ca_type'],
                    '%s is a %s, profile wants %s' % (ca, info.get('ca_type'), want['ca_type']))
        ports = info.get('ports') if isinstance(info.get('ports'), dict) else {}
        for port in sorted(ports, key=_port_sort_key):
            data = ports[port] if isinstance(ports[port], dict) else {}
            comp = '%s/%s' % (ca, port)
            ctx = {'ca': ca, 'port': port}
            if str(data.get('link_layer') or '').lower() != want['link_layer'].lower():
                other_layer.append((comp, data.get('link_layer'), ctx))
                continue
            counted += 1
            ok = True
            state, phys = data.get('state'), data.get('physical_state')
            if str(state).lower() != want['state'].lower() or str(phys).lower() != want['physical_state'].lower():
                ok = False
                run.add('ib.port_state', comp, '%s/%s' % (state, phys), '%s/%s' % (want['state'], want['physical_state']),
                        '%s is %s (physical %s), profile wants %s/%s' % (comp, state, phys, want['state'], want['physical_state']),
                        **ctx)
            rate = _num(data.get('rate_gbps'))
            if want.get('rate_gbps_min') is not None and ok:
                if rate is None:
                    ok = False
                    run.not_measured(comp, 'port rate', 'ibstat %s %s' % (ca, port))
                elif rate < want['rate_gbps_min']:
                    ok = False
                    run.add('ib.port_rate', comp, rate, want['rate_gbps_min'],
                            '%s runs at %s Gb/s, profile wants at least %s Gb/s' % (comp, _g(rate), _g(want['rate_gbps_min'])), **ctx)
            counters = data.get('counters')
            if isinstance(counters, dict):
                counters_seen = True
                over = []
                for cname in sorted(want['counters_max']):
                    value = _num(counters.get(cname))
                    if value is None:
                        run.not_measured(comp, 'counter %s' % cname, 'cat /sys/class/infiniband/%s/ports/%s/counters/%s'
                                         % (ca, port, cname))
                    elif value > want['counters_max'][cname]:
                        over.append('%s=%d (max %d)' % (cname, value, want['counters_max'][cname]))
                if over:
                    run.add('ib.port_counters', comp, ', '.join(over), 'counters within counters_max',
                            '%s error counters: %s' % (comp, ', '.join(over)), **ctx)
            (usable if ok else short).append(comp)
    if want['counters_max'] and counted and not counters_seen:
        run.unknown(['ib_counters'], 'infiniband counters', 'InfiniBand port error counters')
    if len(usable) < want['ports_min']:
        detail = ('; not usable: %s' % ', '.join(short)) if short else ''
        run.add('ib.port_count', 'infiniband', len(usable), want['ports_min'],
                '%d usable %s port(s) (%s, %s%s), profile wants %d%s' % (
                    len(usable), want['link_layer'], want['state'], want['physical_state'],
                    ', >= %s Gb/s' % _g(want['rate_gbps_min']) if want.get('rate_gbps_min') is not None else '',
                    want['ports_min'], detail))
        if counted < want['ports_min']:
            for comp, layer, ctx in other_layer:
                run.add('ib.link_layer', comp, layer, want['link_layer'],
                        '%s runs %s, profile counts %s ports' % (comp, layer, want['link_layer']), **ctx)


def _g(value):
    return ('%g' % value) if isinstance(value, float) else str(value)


# ---------------------------------------------------------------------------------------------
# Network.

_DOWN_STATES = ('DOWN', 'LOWERLAYERDOWN', 'NOTPRESENT', 'DORMANT')


def _check_network(run):
    want = run.profile.get('network')
    if not want:
        return
    net = run.facts.get('network') if isinstance(run.facts.get('network'), dict) else {}
    ifaces = net.get('interfaces') if isinstance(net.get('interfaces'), dict) else {}
    if net.get('probed') is False or (not ifaces and run.status('ip_link') != 'ok'):
        if want['interfaces'] or want.get('roce'):
            run.unknown(['ip_link'], 'network', 'network interfaces')
        return
    for pattern in sorted(want['interfaces']):
        spec = want['interfaces'][pattern]
        names = sorted(n for n in ifaces if fnmatch.fnmatchcase(n, pattern))
        if not names:
            if spec['required']:
                run.add('network.interface_missing', pattern, None, 'present',
                        'no interface matches %s (have: %s)' % (pattern, ', '.join(sorted(ifaces)) or 'none'))
            continue
        for name in names:
            _check_interface(run, spec, name, ifaces[name] if isinstance(ifaces[name], dict) else {})
    roce = want.get('roce')
    if roce:
        for pattern in roce['interfaces']:
            names = sorted(n for n in ifaces if fnmatch.fnmatchcase(n, pattern))
            if not names:
                run.add('network.interface_missing', pattern, None, 'present',
                        'no RoCE interface matches %s (have: %s)' % (pattern, ', '.join(sorted(ifaces)) or 'none'))
            for name in names:
                _check_roce(run, roce, name, ifaces[name] if isinstance(ifaces[name], dict) else {})


def _check_interface(run, spec, name, iface):
    if spec.get('mtu') is not None:
        mtu = _num(iface.get('mtu'))
        if mtu is None:
            run.not_measured(name, 'MTU', 'ip link show %s' % name)
        elif mtu != spec['mtu']:
            run.add('network.mtu', name, int(mtu), spec['mtu'], '%s MTU is %d, profile wants %d' % (name, mtu, spec['mtu']))
    if spec['link_detected']:
        link, oper = iface.get('link_detected'), iface.get('operstate')
        if link is None and oper is None:
            run.not_measured(name, 'link state', 'ethtool %s' % name)
        elif link is False or str(oper).upper() in _DOWN_STATES:
            run.add('network.link', name, 'operstate %s, link %s' % (oper, 'detected' if link else 'not detected' if link is False else 'unknown'),
                    'operstate UP, link detected', '%s has no link (operstate %s)' % (name, oper))
    if spec.get('speed_mbps_min') is not None:
        speed = _num(iface.get('speed_mbps'))
        if speed is None:
            run.not_measured(name, 'link speed', 'ethtool %s' % name)
        elif speed < spec['speed_mbps_min']:
            run.add('network.speed', name, int(speed), spec['speed_mbps_min'],
                    '%s runs at %d Mb/s, profile wants at least %d Mb/s' % (name, speed, spec['speed_mbps_min']))


def _check_roce(run, want, name, iface):
    roce = iface.get('roce') if isinstance(iface.get('roce'), dict) else {}
    prio = want['pfc_priority']
    pfc = roce.get('pfc')
    if not isinstance(pfc, dict) or pfc.get('enabled_priorities') is None:
        run.not_measured(name, 'PFC configuration', 'mlnx_qos -i %s (or dcb pfc show dev %s)' % (name, name))
    else:
        enabled = [int(p) for p in pfc['enabled_priorities'] if str(p).isdigit()]
        if prio not in enabled:
            run.add('network.roce_pfc', name, enabled, prio, '%s PFC is enabled on priorities %s, profile wants %d'
                    % (name, enabled or 'none', prio), priority=prio)
    if want['ecn']:
        ecn = roce.get('ecn')
        if not isinstance(ecn, dict):
            run.not_measured(name, 'ECN configuration', 'cat /sys/class/net/%s/ecn/roce_np/enable/%d (and roce_rp)' % (name, prio))
        else:
            off = [side for side in ('np', 'rp') if (ecn.get(side) or {}).get(str(prio)) is not True]
            if off:
                run.add('network.roce_ecn', name, 'off: %s' % ', '.join('roce_' + s for s in off), 'on for priority %d' % prio,
                        '%s ECN is off on priority %d for %s' % (name, prio, ', '.join('roce_' + s for s in off)), priority=prio)
    if want.get('trust'):
        trust = roce.get('trust')
        if trust is None:
            run.not_measured(name, 'QoS trust mode', 'mlnx_qos -i %s' % name)
        elif str(trust).lower() != want['trust']:
            run.add('network.roce_trust', name, trust, want['trust'], '%s trusts %s, profile wants %s' % (name, trust, want['trust']))


# ---------------------------------------------------------------------------------------------
# Host.

def _check_host(run):
    want = run.profile.get('host')
    if not want:
        return
    host = run.facts.get('host') if isinstance(run.facts.get('host'), dict) else {}
    _check_os(run, want, host)
    if want['kernel_modules_required']:
        loaded = host.get('kernel_modules')
        if not isinstance(loaded, list):
            run.unknown(['kernel_modules'], 'kernel modules', 'loaded kernel modules')
        else:
            have = set(str(m).replace('-', '_') for m in loaded)
            for module in want['kernel_modules_required']:
                if module.replace('-', '_') not in have:
                    run.add('host.kernel_module', 'module %s' % module, 'not loaded', 'loaded',
                            'kernel module %s is not loaded' % module, module=module)
    _check_time(run, want, host)
    if want['memlock_unlimited']:
        if 'memlock_unlimited' not in host and 'memlock_kib' not in host:
            run.unknown(['memlock'], 'host', 'the locked-memory limit')
        elif host.get('memlock_unlimited') is None and host.get('memlock_kib') is None:
            run.not_measured('host', 'locked-memory limit', 'ulimit -l')
        elif host.get('memlock_unlimited') is not True:
            run.add('host.memlock', 'host', '%s KiB' % host.get('memlock_kib'), 'unlimited',
                    'locked-memory limit (ulimit -l) is %s KiB, RDMA wants unlimited' % host.get('memlock_kib'))
    _check_disks(run, want, host)
    _check_ports(run, want, host)
    if want['pcie_acs_must_be_disabled']:
        acs = host.get('pcie_acs')
        if not isinstance(acs, dict):
            run.unknown(['lspci'], 'pcie acs', 'PCIe ACS settings')
        elif not acs.get('checked'):
            run.not_measured('pcie acs', 'PCIe ACS control bits', 'sudo lspci -vvv | grep ACSCtl')
        elif acs.get('enabled'):
            bridges = sorted(str(b) for b in acs['enabled'])
            run.add('host.pcie_acs', 'pcie acs', bridges, [], 'PCIe ACS is enabled on %d bridge(s): %s' % (len(bridges), ', '.join(bridges)))


def _check_os(run, want, host):
    os_want = want.get('os')
    if not os_want:
        return
    info = host.get('os')
    if not isinstance(info, dict):
        run.unknown(['os_release'], 'host', 'the operating system')
        return
    os_id = str(info.get('id') or '').lower()
    version = str(info.get('version_id') or '')
    ids = [i.lower() for i in os_want['ids']]
    label = info.get('pretty_name') or ('%s %s' % (os_id, version)).strip()
    if os_id not in ids:
        run.add('host.os', 'host', label, ', '.join(os_want['ids']), 'operating system %s is not one of %s' % (label, ', '.join(os_want['ids'])))
        return
    versions = dict((k.lower(), v) for k, v in (os_want.get('versions') or {}).items()).get(os_id)
    if versions and not any(version == v or version.startswith(v.rstrip('.') + '.') for v in versions):
        run.add('host.os', 'host', label, '%s %s' % (os_id, ' or '.join(versions)),
                'operating system %s: version %s is not one of %s' % (label, version, ', '.join(versions)))


def _check_time(run, want, host):
    t_want = want.get('time')
    if not t_want:
        return
    info = host.get('time')
    if not isinstance(info, dict):
        run.unknown(['chrony'], 'chrony', 'clock synchronisation')
        return
    if info.get('installed') is False:
        run.add('host.chrony_missing', 'chrony', 'not installed', 'chrony synchronised', 'chronyc is not installed')
        return
    if t_want['require_synchronised']:
        sync = info.get('synchronised')
        if sync is None:
            run.not_measured('chrony', 'synchronisation state', 'chronyc tracking')
        elif sync is not True:
            run.add('host.time_sync', 'chrony', 'not synchronised (leap status %s, reference %s)' % (info.get('leap_status'), info.get('reference')),
                    'synchronised', 'the clock is not synchronised (chronyc tracking: leap status %s)' % info.get('leap_status'))
    if t_want.get('max_offset_ms') is not None:
        offset = _num(info.get('offset_seconds'))
        if offset is None:
            run.not_measured('chrony', 'clock offset', 'chronyc tracking')
        elif abs(offset) * 1000.0 > t_want['max_offset_ms']:
            run.add('host.time_offset', 'chrony', '%.3f ms' % (offset * 1000.0), '<= %s ms' % _g(t_want['max_offset_ms']),
                    'the clock is %.3f ms %s' % (abs(offset) * 1000.0, 'ahead' if offset > 0 else 'behind'))


def _mount_of(disks, path):
    best = None
    for entry in disks.values():
        mount = entry.get('mount') if isinstance(entry, dict) else None
        if not isinstance(mount, str):
            continue
        if path == mount or path.startswith(mount.rstrip('/') + '/'):
            if best is None or len(mount) > len(best.get('mount')):
                best = entry
    return best


def _check_disks(run, want, host):
    if not want['disks']:
        return
    disks = host.get('disks')
    if not isinstance(disks, dict):
        run.unknown(['disks'], 'disks', 'free disk space')
        return
    for item in want['disks']:
        path = item['path']
        entry = disks.get(path) if isinstance(disks.get(path), dict) else _mount_of(disks, path)
        comp = 'disk %s' % path
        if entry is None:
            run.not_measured(comp, 'free space', 'df -h %s' % path)
            continue
        free = _num(entry.get('free_bytes'))
        if free is None:
            run.not_measured(comp, 'free space', 'df -h %s' % path)
        elif free < item['min_free_gb'] * 1e9:
            run.add('host.disk_free', comp, '%.1f GB' % (free / 1e9), '>= %s GB' % _g(item['min_free_gb']),
                    '%s has %.1f GB free, profile wants at least %s GB' % (path, free / 1e9, _g(item['min_free_gb'])), path=path)


def _check_ports(run, want, host):
    if not want['ports_must_be_free']:
        return
    listening = host.get('listening')
    if not isinstance(listening, list):
        run.unknown(['listening'], 'ports', 'listening ports')
        return
    for spec in want['ports_must_be_free']:
        number, proto = spec.split('/')
        users = [e for e in listening if isinstance(e, dict) and str(e.get('port')) == number
                 and str(e.get('proto') or 'tcp').lower().startswith(proto)]
        if users:
            who = _hygiene.port_users(users, host)
            run.add('host.port_in_use', 'port %s' % spec, who, 'free', 'port %s is in use by %s' % (spec, who), port=number)


# ---------------------------------------------------------------------------------------------
# Hygiene before a job: _hygiene.py.

def _check_hygiene(run):
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    devices = [d for d in (gpu.get('devices') or []) if isinstance(d, dict)]
    gpu_want = run.profile.get('gpu')
    if gpu_want and devices:
        _hygiene.check_gpu_usage(run, gpu_want, devices)
    host_want = run.profile.get('host')
    if host_want:
        host = run.facts.get('host') if isinstance(run.facts.get('host'), dict) else {}
        _hygiene.check_leftover_processes(run, host_want, host, devices)
        network = run.facts.get('network') if isinstance(run.facts.get('network'), dict) else {}
        _links.check_link_flaps(run, host_want, network)


# ---------------------------------------------------------------------------------------------
# Software.

_SOFTWARE = (
    # check, fact key, exact key, min key, probes, label
    ('software.driver_version', 'driver_version', 'driver_version', 'driver_version_min', ['nvidia_query_gpu', 'nvidia_smi_xml'],
     'NVIDIA driver'),
    ('software.cuda_driver_version', 'cuda_driver_version', None, 'cuda_driver_version_min', ['nvidia_smi_xml'],
     'CUDA version of the driver'),
    ('software.cuda_toolkit_version', 'cuda_toolkit_version', 'cuda_toolkit_version', 'cuda_toolkit_version_min', ['nvcc'],
     'CUDA toolkit'),
    ('software.nccl_version', 'nccl_version', 'nccl_version', 'nccl_version_min', ['nccl_version'], 'NCCL'),
)


def _check_software(run):
    want = run.profile.get('software')
    if not want:
        return
    soft = run.facts.get('software') if isinstance(run.facts.get('software'), dict) else {}
    gpu = run.facts.get('gpu') if isinstance(run.facts.get('gpu'), dict) else {}
    for check, fact, exact_key, min_key, probes, label in _SOFTWARE:
        exact = want.get(exact_key) if exact_key else None
        minimum = want.get(min_key)
        if exact is None and minimum is None:
            continue
        value = soft.get(fact)
        if value is None and fact in ('driver_version', 'cuda_driver_version'):
            value = gpu.get(fact)
        component = CHECKS[check]['component_kind']
        expected = ' and '.join(x for x in (exact, ('>= %s' % minimum) if minimum else None) if x)
        if value is None:
            if fact in ('driver_version', 'cuda_driver_version') and gpu.get('installed') is False:
                if not (run.profile.get('gpu') or {}).get('count'):
                    run.add(check, component, 'not installed', expected, '%s: nvidia-smi is not installed' % label)
                continue
            states = [s for p in probes for s in run.statuses(p)]
            if 'ok' in states or 'missing' in states:
                run.add(check, component, 'not found', expected, '%s not found on the node; profile wants %s' % (label, expected))
            else:
                run.unknown(probes, component, '%s version' % label)
            continue
        bad = []
        if exact is not None and not version_matches(value, exact):
            bad.append('does not match %s' % exact)
        if minimum is not None and not version_at_least(value, minimum):
            bad.append('is older than %s' % minimum)
        if bad:
            run.add(check, component, str(value), expected, '%s %s %s' % (label, value, ' and '.join(bad)))


# ---------------------------------------------------------------------------------------------
# The public functions (plugins/module_utils/_judge.py validates the profile and applies the site overrides).

def check_node(facts, profile, host):
    """Check one host's facts against a normalised profile; return the findings (a list)."""
    run = _Run(facts, profile, host)
    _check_probes(run)
    _check_gpu(run)
    _check_infiniband(run)
    _check_network(run)
    _check_host(run)
    _check_hygiene(run)
    _check_software(run)
    return run.findings


def check_group(facts_by_host, keys=DEFAULT_GROUP_KEYS):
    """Compare hosts: for each dotted fact key, every host whose value differs from the majority gets a
    ``consistency.<key>`` finding. Hosts without the value are left out; when all agree there is nothing."""
    findings = []
    hosts = sorted(facts_by_host or {})
    for key in keys:
        values = {}
        for host in hosts:
            value = _get(facts_by_host[host], key)
            if value is not None:
                values[host] = str(value)
        distinct = sorted(set(values.values()))
        if len(distinct) < 2:
            continue
        tally = sorted(((sum(1 for v in values.values() if v == d), d) for d in distinct), key=lambda t: (-t[0], t[1]))
        majority = tally[0][1] if tally[0][0] > tally[1][0] else None
        check = 'consistency.%s' % key
        catalogue = {check: _entry(check)}
        summary = ', '.join('%s on %d host(s)' % (d, n) for n, d in tally)
        for host in hosts:
            if host not in values or values[host] == majority:
                continue
            expected = majority if majority is not None else 'one value on every host'
            findings.append(_findings.make(
                catalogue, host, check, key, values[host], expected,
                '%s is %s on this host; across %d hosts: %s' % (key, values[host], len(values), summary),
                context={'expected': expected, 'key': key}))
    return findings
