// Package pci counts the NVIDIA GPUs and NVSwitches on the node's PCI bus from
// sysfs, without NVML: the answer that still holds when the driver is not loaded,
// libnvidia-ml.so is missing, or the driver failed to initialise a GPU.
//
// Scan reads <sysfs>/bus/pci/devices/*/{vendor,class,device}. A function with
// vendor 0x10de (NVIDIA) is
//
//   - a GPU when its class is 0x0300xx (VGA compatible controller) or 0x0302xx
//     (3D controller), unless it is an SR-IOV virtual function (it has a physfn
//     link: vGPU hosts show one per VF) or is bound to vfio-pci or pci-stub (passed
//     through to a virtual machine, where NVML on the host cannot see it by design);
//     those are listed apart, in Bus.Excluded;
//   - an NVSwitch when its class is 0x0680xx ("other bridge", as lspci shows
//     HGX and DGX NVSwitches);
//   - nothing of ours otherwise: the GPU's HDMI audio function (0x0403xx), the
//     PCIe bridges of Grace CPUs and NVIDIA-made switches (0x0604xx).
//
// An unreadable or malformed file loses that device only; Scan returns what it
// could read with an error naming the file.
//
// The Source reports the count as gpuwatch_node_gpus{source="pci"} on the full
// schedule; the health engine compares it with NVML's count (source="nvml") and
// the node's remembered inventory (source="expected") and raises gpu-count.
package pci
