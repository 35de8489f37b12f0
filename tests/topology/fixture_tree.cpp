#include "fixture_tree.hpp"

#include <fstream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace fabricbench::testing {
namespace {

namespace fs = std::filesystem;

class Tree {
 public:
  explicit Tree(fs::path root) : root_(std::move(root)) {}

  void file(const std::string& rel, const std::string& content) const {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::trunc) << content;
  }
  void dir(const std::string& rel) const { fs::create_directories(root_ / rel); }
  // A relative symlink at `rel` pointing at `target` (both from the root), as sysfs has them.
  void link(const std::string& rel, const std::string& target) const {
    const fs::path at = root_ / rel;
    fs::create_directories(at.parent_path());
    fs::create_directories(root_ / target);
    std::error_code ec;
    fs::remove(at, ec);
    fs::create_directory_symlink(fs::path(target).lexically_relative(fs::path(rel).parent_path()), at);
  }

 private:
  fs::path root_;
};

std::string bdf(unsigned bus, unsigned dev = 0, unsigned fn = 0) {
  return fmt::format("0000:{:02x}:{:02x}.{}", bus, dev, fn);
}

struct Link {
  std::string speed;  // "32.0 GT/s PCIe"
  int width;
  std::string max_speed;
  int max_width;
};

// A PCI function at devices/<parent>/<id>, listed in bus/pci/devices.
std::string pci(const Tree& t, const std::string& parent, const std::string& id, const std::string& vendor,
                const std::string& cls, int numa, const Link* link = nullptr, const char* driver = nullptr) {
  const std::string dev = "sys/devices/" + parent + "/" + id;
  t.file(dev + "/vendor", vendor + "\n");
  t.file(dev + "/class", cls + "\n");
  t.file(dev + "/numa_node", fmt::format("{}\n", numa));
  if (link != nullptr) {
    t.file(dev + "/current_link_speed", link->speed + "\n");
    t.file(dev + "/max_link_speed", link->max_speed + "\n");
    t.file(dev + "/current_link_width", fmt::format("{}\n", link->width));
    t.file(dev + "/max_link_width", fmt::format("{}\n", link->max_width));
  }
  if (driver != nullptr) t.link(dev + "/driver", std::string("sys/bus/pci/drivers/") + driver);
  t.link("sys/bus/pci/devices/" + id, dev);
  return parent + "/" + id;
}

void host(const Tree& t, const std::string& hostname, const std::string& model, int sockets, int cores_per_socket,
          int threads_per_core, unsigned long long mem_kib, int numa, const std::string& os,
          const std::string& kernel) {
  std::string cpuinfo;
  int processor = 0;
  for (int s = 0; s < sockets; ++s) {
    for (int th = 0; th < threads_per_core; ++th) {
      for (int c = 0; c < cores_per_socket; ++c) {
        cpuinfo += fmt::format(
            "processor\t: {}\nvendor_id\t: GenuineIntel\nmodel name\t: {}\nphysical id\t: {}\nsiblings\t: {}\n"
            "core id\t\t: {}\ncpu cores\t: {}\n\n",
            processor++, model, s, cores_per_socket * threads_per_core, c, cores_per_socket);
      }
    }
  }
  t.file("proc/cpuinfo", cpuinfo);
  t.file("proc/meminfo", fmt::format("MemTotal:       {} kB\nMemFree:        1000 kB\n", mem_kib));
  for (int n = 0; n < numa; ++n) t.file(fmt::format("sys/devices/system/node/node{}/cpulist", n), "0-1\n");
  t.file("sys/devices/system/node/possible", fmt::format("0-{}\n", numa - 1));
  t.file("proc/sys/kernel/hostname", hostname + "\n");
  t.file("proc/sys/kernel/osrelease", kernel + "\n");
  t.file("etc/os-release", fmt::format("NAME=\"x\"\nPRETTY_NAME=\"{}\"\nID=x\n", os));
  t.file("sys/devices/virtual/net/lo/type", "772\n");
  t.file("sys/devices/virtual/net/lo/operstate", "unknown\n");
  t.link("sys/class/net/lo", "sys/devices/virtual/net/lo");
}

void nvidia_driver(const Tree& t, bool peermem) {
  t.file("sys/module/nvidia/version", "550.54.15\n");
  t.file("proc/driver/nvidia/version",
         "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n");
  std::string modules = "nvidia_uvm 4927488 0 - Live 0x0000000000000000 (POE)\n";
  if (peermem) {
    modules += "nvidia_peermem 16384 0 - Live 0x0000000000000000 (POE)\n";
    t.file("sys/module/nvidia_peermem/initstate", "live\n");
  }
  modules += "nvidia 56717312 3 nvidia_uvm,nvidia_peermem, Live 0x0000000000000000 (POE)\n";
  modules += "mlx5_ib 434176 0 - Live 0x0000000000000000\nib_core 442368 2 mlx5_ib, Live 0x0000000000000000\n";
  t.file("proc/modules", modules);
}

// An RDMA device at a PCI function, with one port and its netdev.
void rdma(const Tree& t, const std::string& pci_path, const std::string& name, const std::string& rate,
          const std::string& layer, const std::string& netdev, int netdev_type, const std::string& speed_mbps,
          int mtu) {
  const std::string dev = "sys/devices/" + pci_path;
  const std::string ib = dev + "/infiniband/" + name;
  t.file(ib + "/fw_ver", "28.39.1002\n");
  t.file(ib + "/node_type", "1: CA\n");
  t.file(ib + "/ports/1/state", "4: ACTIVE\n");
  t.file(ib + "/ports/1/phys_state", "5: LinkUp\n");
  t.file(ib + "/ports/1/rate", rate + "\n");
  t.file(ib + "/ports/1/link_layer", layer + "\n");
  t.link(ib + "/device", dev);
  t.link("sys/class/infiniband/" + name, ib);
  const std::string net = dev + "/net/" + netdev;
  t.file(net + "/type", fmt::format("{}\n", netdev_type));
  t.file(net + "/operstate", "up\n");
  t.file(net + "/mtu", fmt::format("{}\n", mtu));
  t.file(net + "/speed", speed_mbps + "\n");
  t.link(net + "/device", dev);
  t.link("sys/class/net/" + netdev, net);
}

void ethernet(const Tree& t, const std::string& pci_path, const std::string& name, const std::string& speed_mbps,
              int mtu, const std::string& state) {
  const std::string net = "sys/devices/" + pci_path + "/net/" + name;
  t.file(net + "/type", "1\n");
  t.file(net + "/operstate", state + "\n");
  t.file(net + "/mtu", fmt::format("{}\n", mtu));
  t.file(net + "/speed", speed_mbps + "\n");
  t.link(net + "/device", "sys/devices/" + pci_path);
  t.link("sys/class/net/" + name, net);
}

const Link gen5x16{"32.0 GT/s PCIe", 16, "32.0 GT/s PCIe", 16};
const Link gen4x16{"16.0 GT/s PCIe", 16, "16.0 GT/s PCIe", 16};

// Per GPU i: root complex R, root port, a switch (upstream port, two
// downstream ports), the GPU and one InfiniBand HCA under that switch.
constexpr unsigned dgx_roots[8] = {0x15, 0x26, 0x37, 0x48, 0x97, 0xa8, 0xb9, 0xca};

std::string dgx_ib_path(unsigned r) {
  return fmt::format("pci0000:{:02x}/{}/{}/{}/{}", r, bdf(r, 1), bdf(r + 1), bdf(r + 2, 1), bdf(r + 4));
}

void dgx(const Tree& t, const std::string& hostname, bool peermem) {
  host(t, hostname, "Intel(R) Xeon(R) Platinum 8480CL", 2, 56, 2, 2113389036ULL, 2, "Ubuntu 22.04.4 LTS",
       "5.15.0-105-generic");
  nvidia_driver(t, peermem);
  for (unsigned i = 0; i < 8; ++i) {
    const unsigned r = dgx_roots[i];
    const int numa = i < 4 ? 0 : 1;
    const std::string root = fmt::format("pci0000:{:02x}", r);
    const std::string rp = pci(t, root, bdf(r, 1), "0x8086", "0x060400", numa);
    const std::string usp = pci(t, rp, bdf(r + 1), "0x1000", "0x060400", numa);
    const std::string dsp0 = pci(t, usp, bdf(r + 2, 0), "0x1000", "0x060400", numa);
    const std::string dsp1 = pci(t, usp, bdf(r + 2, 1), "0x1000", "0x060400", numa);
    pci(t, dsp0, bdf(r + 3), "0x10de", "0x030200", numa, &gen5x16, "nvidia");
    const std::string nic = pci(t, dsp1, bdf(r + 4), "0x15b3", "0x020700", numa, nullptr, "mlx5_core");
    rdma(t, nic, fmt::format("mlx5_{}", i), "400 Gb/sec (4X NDR)", "InfiniBand", fmt::format("ibp{}s0", r + 4), 32,
         "400000", 4092);
  }
  // Two Ethernet ports of one adapter on socket 1.
  const std::string rp = pci(t, "pci0000:d9", bdf(0xd9, 1), "0x8086", "0x060400", 1);
  const std::string f0 = pci(t, rp, bdf(0xda, 0, 0), "0x8086", "0x020000", 1, nullptr, "i40e");
  const std::string f1 = pci(t, rp, bdf(0xda, 0, 1), "0x8086", "0x020000", 1, nullptr, "i40e");
  ethernet(t, f0, "enp218s0f0", "100000", 1500, "up");
  ethernet(t, f1, "enp218s0f1", "100000", 1500, "up");
}

void pcie4_roce(const Tree& t, const std::string& hostname) {
  host(t, hostname, "AMD EPYC 9354 32-Core Processor", 2, 32, 2, 1056626068ULL, 2, "Rocky Linux 9.3 (Blue Onyx)",
       "5.14.0-362.8.1.el9_3.x86_64");
  nvidia_driver(t, true);
  for (unsigned s = 0; s < 2; ++s) {
    const unsigned r = s == 0 ? 0x40 : 0xc0;
    const int numa = static_cast<int>(s);
    const std::string root = fmt::format("pci0000:{:02x}", r);
    const std::string rp = pci(t, root, bdf(r, 1, 1), "0x1022", "0x060400", numa);
    const std::string usp = pci(t, rp, bdf(r + 1), "0x1000", "0x060400", numa);
    for (unsigned k = 0; k < 3; ++k) {
      const std::string dsp = pci(t, usp, bdf(r + 2, k), "0x1000", "0x060400", numa);
      if (k < 2) {
        pci(t, dsp, bdf(r + 3 + k), "0x10de", "0x030200", numa, &gen4x16, "nvidia");
      } else {
        const std::string nic = pci(t, dsp, bdf(r + 5), "0x15b3", "0x020000", numa, nullptr, "mlx5_core");
        rdma(t, nic, fmt::format("mlx5_{}", s), "200 Gb/sec (4X HDR)", "Ethernet", fmt::format("enp{}s0np0", r + 5), 1,
             "200000", 9000);
      }
    }
  }
  const std::string rp = pci(t, "pci0000:00", bdf(0x00, 0x1c), "0x8086", "0x060400", 0);
  const std::string mgmt = pci(t, rp, bdf(0x02), "0x8086", "0x020000", 0, nullptr, "igb");
  ethernet(t, mgmt, "eno1", "1000", 1500, "up");
}

void cloud_vm(const Tree& t, const std::string& hostname) {
  host(t, hostname, "Intel(R) Xeon(R) CPU @ 2.20GHz", 1, 4, 2, 32869476ULL, 1, "Debian GNU/Linux 12 (bookworm)",
       "6.1.0-18-cloud-amd64");
  t.file("proc/modules", "virtio_net 61440 0 - Live 0x0000000000000000\n");
  t.file("sys/module/virtio_net/initstate", "live\n");
  const std::string dev = pci(t, "pci0000:00", bdf(0x00, 0x03), "0x1af4", "0x020000", -1, nullptr, "virtio-pci");
  const std::string virtio = "sys/devices/" + dev + "/virtio0";
  t.link(virtio + "/driver", "sys/bus/virtio/drivers/virtio_net");
  const std::string net = virtio + "/net/eth0";
  t.file(net + "/type", "1\n");
  t.file(net + "/operstate", "up\n");
  t.file(net + "/mtu", "1460\n");
  t.file(net + "/speed", "-1\n");
  t.link(net + "/device", virtio);
  t.link("sys/class/net/eth0", net);
}

// ---- PCIe switch nodes: sharing, ACS, IOMMU, MIG, VM

// 4 KiB of PCIe config space whose extended capability list holds AER at
// 0x100 and ACS (0x000D) at 0x148 with `acs_control` in its Control
// register; AER alone without it.
std::string config_with_acs(std::optional<unsigned> acs_control) {
  std::string c(4096, '\0');
  const auto put32 = [&](std::size_t at, unsigned v) {
    for (int b = 0; b < 4; ++b) c[at + static_cast<std::size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xffU);
  };
  put32(0x00, 0x00001000U);  // vendor/device ids (not read)
  if (!acs_control) {
    put32(0x100, 0x0001U | (1U << 16));  // AER only: a switch's upstream port has no ACS
    return c;
  }
  put32(0x100, 0x0001U | (1U << 16) | (0x148U << 20));  // AER, version 1, next 0x148
  put32(0x148, 0x000dU | (1U << 16));                   // ACS, version 1, last
  put32(0x14c, 0x005fU | (*acs_control << 16));         // capability 0x5f, control
  return c;
}

struct SwitchNode {
  std::vector<int> gpus_per_switch{2, 2};
  std::optional<unsigned> acs_control;  // on every bridge; none: no config files
  bool iommu_dma = false;
  bool mig = false;
  bool vm = false;
};

const Link gen5_empty{"Unknown", 0, "32.0 GT/s PCIe", 16};

void switch_node(const Tree& t, const std::string& hostname, const SwitchNode& spec) {
  host(t, hostname, "AMD EPYC 9454 48-Core Processor", 1, 48, 2, 792729600ULL, 1, "Ubuntu 24.04.1 LTS",
       "6.8.0-45-generic");
  nvidia_driver(t, true);
  t.dir("sys/class/iommu");
  t.dir("sys/kernel/iommu_groups");
  t.file("proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/nvme0n1p2 ro quiet\n");
  int group = 0;
  int minor = 0;
  for (std::size_t s = 0; s < spec.gpus_per_switch.size(); ++s) {
    const unsigned r = 0x10 + 0x20 * static_cast<unsigned>(s);
    const std::string root = fmt::format("pci0000:{:02x}", r);
    const std::string rp = pci(t, root, bdf(r, 1), "0x1022", "0x060400", 0, &gen5x16);
    const std::string usp = pci(t, rp, bdf(r + 1), "0x1000", "0x060400", 0, &gen5x16);
    std::vector<std::string> bridges{rp, usp};
    const int n = spec.gpus_per_switch[s];
    for (int k = 0; k < n; ++k) {
      const auto kk = static_cast<unsigned>(k);
      const std::string dsp = pci(t, usp, bdf(r + 2, kk), "0x1000", "0x060400", 0, &gen5x16);
      bridges.push_back(dsp);
      const std::string gpu_bus = bdf(r + 3 + kk);
      const std::string gpu = pci(t, dsp, gpu_bus, "0x10de", "0x030200", 0, &gen5x16, "nvidia");
      if (spec.iommu_dma) {
        const std::string g = fmt::format("sys/kernel/iommu_groups/{}", group++);
        t.file(g + "/type", "DMA-FQ\n");
        t.link("sys/devices/" + gpu + "/iommu_group", g);
      }
      t.file("proc/driver/nvidia/gpus/" + gpu_bus + "/information",
             fmt::format("Model: \t\t NVIDIA H100 PCIe\nIRQ:   \t\t 0\nBus Location: \t {}\nDevice Minor: \t {}\n",
                         gpu_bus, minor));
      if (spec.mig && minor == 0)
        for (int gi = 1; gi <= 7; ++gi) t.dir(fmt::format("proc/driver/nvidia/capabilities/gpu0/mig/gi{}/access", gi));
      ++minor;
    }
    // An empty downstream port: nothing trained on it, it carries nothing.
    bridges.push_back(pci(t, usp, bdf(r + 2, static_cast<unsigned>(n)), "0x1000", "0x060400", 0, &gen5_empty));
    if (spec.acs_control)
      for (const std::string& b : bridges)
        t.file("sys/devices/" + b + "/config", config_with_acs(b == usp ? std::nullopt : spec.acs_control));
  }
  if (spec.iommu_dma) {
    t.dir("sys/class/iommu/ivhd0");
    t.file("proc/cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/nvme0n1p2 ro amd_iommu=on quiet\n");
  }
  if (spec.vm) {
    std::string cpuinfo;
    for (int p = 0; p < 8; ++p)
      cpuinfo += fmt::format(
          "processor\t: {}\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9454 48-Core Processor\n"
          "physical id\t: 0\ncore id\t\t: {}\nflags\t\t: fpu vme de pse tsc msr pae hypervisor lahf_lm\n\n",
          p, p);
    t.file("proc/cpuinfo", cpuinfo);
    t.file("sys/class/dmi/id/sys_vendor", "QEMU\n");
    t.file("sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
    for (int v = 0; v < 3; ++v) t.dir(fmt::format("sys/bus/virtio/devices/virtio{}", v));
  }
}

}  // namespace

std::vector<std::string> fixture_names() {
  return {"dgx",
          "pcie4-roce",
          "cloud-vm",
          "dgx-port-down",
          "dgx-slow-port",
          "dgx-pcie-gen4x8",
          "dgx-no-peermem",
          "pcie-switch-2x2",
          "pcie-switch-2-4",
          "pcie-switch-acs",
          "pcie-switch-iommu",
          "pcie-switch-mig",
          "pcie-switch-vm"};
}

void write_fixture(const std::string& name, const std::filesystem::path& root, const std::string& hostname) {
  const Tree t(root);
  if (name == "dgx") {
    dgx(t, hostname, true);
  } else if (name == "pcie4-roce") {
    pcie4_roce(t, hostname);
  } else if (name == "cloud-vm") {
    cloud_vm(t, hostname);
  } else if (name == "dgx-port-down") {
    dgx(t, hostname, true);
    const std::string port = "sys/devices/" + dgx_ib_path(dgx_roots[3]) + "/infiniband/mlx5_3/ports/1/";
    t.file(port + "state", "1: DOWN\n");
    t.file(port + "phys_state", "3: Disabled\n");
    t.file(port + "rate", "10 Gb/sec (4X SDR)\n");
  } else if (name == "dgx-slow-port") {
    dgx(t, hostname, true);
    t.file("sys/devices/" + dgx_ib_path(dgx_roots[5]) + "/infiniband/mlx5_5/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  } else if (name == "dgx-pcie-gen4x8") {
    dgx(t, hostname, true);
    const unsigned r = dgx_roots[2];
    const std::string gpu =
        fmt::format("sys/devices/pci0000:{:02x}/{}/{}/{}/{}/", r, bdf(r, 1), bdf(r + 1), bdf(r + 2, 0), bdf(r + 3));
    t.file(gpu + "current_link_speed", "16.0 GT/s PCIe\n");
    t.file(gpu + "current_link_width", "8\n");
  } else if (name == "dgx-no-peermem") {
    dgx(t, hostname, false);
  } else if (name == "pcie-switch-2x2") {
    switch_node(t, hostname, {.acs_control = 0x0000});
  } else if (name == "pcie-switch-2-4") {
    switch_node(t, hostname, {.gpus_per_switch = {2, 4}, .acs_control = 0x0000});
  } else if (name == "pcie-switch-acs") {
    // Source Validation, P2P Request and Completion Redirect, Upstream Forwarding: what a VM host's BIOS sets.
    switch_node(t, hostname, {.acs_control = 0x001d});
  } else if (name == "pcie-switch-iommu") {
    switch_node(t, hostname, {.acs_control = 0x0000, .iommu_dma = true});
  } else if (name == "pcie-switch-mig") {
    switch_node(t, hostname, {.acs_control = 0x0000, .mig = true});
  } else if (name == "pcie-switch-vm") {
    switch_node(t, hostname, {.acs_control = 0x0000, .vm = true});
  } else {
    throw std::invalid_argument("unknown topology fixture '" + name + "'");
  }
}

}  // namespace fabricbench::testing
