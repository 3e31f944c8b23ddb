package report

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// rccl-tests' NIC counters (RCCL_TESTS_NET_COUNTER_ENABLE, rccl-tests dialect): the node's lead process reads
// the counters of its RDMA NICs (ethtool -S, the InfiniBand hw_counters in sysfs, bnxt_re's debugfs file) before
// the sweep and after it, and prints rccl-tests' announcement lines and its NET_COUNTER_TABLE of deltas and
// rates. Without an RDMA NIC it prints rccl-tests' warning on stderr and collects nothing.

// SysRoot is where sysfs (and debugfs under kernel/debug) is mounted; tests point it elsewhere.
var SysRoot = "/sys"

const (
	srcEthtool = iota // ethtool -S, prefix counters expanded to name0..name7
	srcIBHW           // /sys/class/infiniband/DEV/ports/PORT/hw_counters, else DEV/hw_counters
	srcDebugfs        // /sys/kernel/debug/bnxt_re/DEV/info
)

type netCounter struct {
	name     string
	src      int
	prefix   bool
	fallback string
}

// rccl-tests' counter tables, by NIC type (bnxt_re's also for NICs of unknown type).
var (
	ionicCounters = []netCounter{
		{"frames_rx_pripause", srcEthtool, true, ""}, {"frames_tx_pripause", srcEthtool, true, ""},
		{"rx_rdma_cnp_pkts", srcIBHW, false, ""}, {"tx_rdma_cnp_pkts", srcIBHW, false, ""},
		{"rx_rdma_mtu_discard_pkts", srcIBHW, false, ""}, {"resp_rx_outof_buf", srcIBHW, false, ""},
		{"tx_rdma_ack_timeout", srcIBHW, false, ""}, {"req_tx_retry_excd_err", srcIBHW, false, ""},
		{"resp_rx_outouf_seq", srcIBHW, false, ""}, {"req_rx_pkt_seq_err", srcIBHW, false, ""},
		{"tx_rdma_ucast_bytes", srcIBHW, false, ""}, {"rx_rdma_ucast_bytes", srcIBHW, false, ""},
		{"tx_rdma_ucast_pkts", srcIBHW, false, ""}, {"rx_rdma_ucast_pkts", srcIBHW, false, ""},
	}
	bnxtCounters = []netCounter{
		{"rx_pfc_ena_frames_pri", srcEthtool, true, ""}, {"tx_pfc_ena_frames_pri", srcEthtool, true, ""},
		{"pfc_pri3_rx_transitions", srcEthtool, false, ""}, {"pfc_pri3_tx_transitions", srcEthtool, false, ""},
		{"rx_cnp_pkts", srcIBHW, false, "rp_cnp_handled"}, {"tx_cnp_pkts", srcIBHW, false, "np_cnp_sent"},
		{"rx_roce_discards", srcIBHW, false, ""},
		{"rx_stat_discards", srcDebugfs, false, ""}, {"to_retransmits", srcDebugfs, false, ""},
		{"max_retry_exceeded", srcDebugfs, false, ""}, {"oos_drop_count", srcDebugfs, false, ""},
		{"seq_err_naks_rcvd", srcDebugfs, false, ""},
	}
)

// NetCounters is one run's collection: nil when it is off.
type NetCounters struct {
	nics, ibs []string
	types     []string // rccl-tests' NIC type of each (nicType)
	counters  []netCounter
	before    []nicSnapshot
	baseRank  int
	host      string
}

type nicSnapshot struct {
	at     time.Time
	typ    string
	values map[string]uint64
}

// netCountersOn reads RCCL_TESTS_NET_COUNTER_ENABLE as rccl-tests does (atoi above 0).
func netCountersOn(getenv func(string) string) bool {
	v := strings.TrimSpace(getenv("RCCL_TESTS_NET_COUNTER_ENABLE"))
	end := 0
	for end < len(v) && (v[end] >= '0' && v[end] <= '9' || end == 0 && (v[end] == '-' || v[end] == '+')) {
		end++
	}
	n, err := strconv.Atoi(v[:end])
	return err == nil && n > 0
}

// StartNetCounters finds the NICs, reads their counters and announces them (out), as rccl-tests'
// NetCounterCollectBefore; nil when collection is off or there is no RDMA NIC (warn gets rccl-tests' line).
func StartNetCounters(getenv func(string) string, out, warn io.Writer, baseRank int) *NetCounters {
	if !netCountersOn(getenv) {
		return nil
	}
	nc := &NetCounters{baseRank: baseRank}
	nc.host, _ = os.Hostname()
	if hca := getenv("NCCL_IB_HCA"); hca != "" {
		for _, ib := range strings.Split(hca, ",") {
			if ib = strings.Trim(ib, " \t"); ib != "" {
				nc.ibs = append(nc.ibs, ib)
				nc.nics = append(nc.nics, firstEntry(filepath.Join(SysRoot, "class/infiniband", ibBase(ib), "device/net")))
			}
		}
	}
	if len(nc.ibs) == 0 {
		prefix := getenv("RCCL_TESTS_NET_COUNTER_NIC_PREFIX")
		hasPrefix := prefix != ""
		entries, _ := os.ReadDir(filepath.Join(SysRoot, "class/net"))
		for _, e := range entries {
			n := e.Name()
			if hasPrefix && !strings.HasPrefix(n, prefix) ||
				!hasPrefix && (n == "lo" || strings.HasPrefix(n, "veth") || strings.HasPrefix(n, "fenic")) {
				continue
			}
			if ib := firstEntry(filepath.Join(SysRoot, "class/net", n, "device/infiniband")); ib != "" {
				nc.nics, nc.ibs = append(nc.nics, n), append(nc.ibs, ib)
			}
		}
		if len(nc.nics) == 0 {
			fmt.Fprintln(warn, "# Warning: no RDMA-capable NICs found, disabling net counter collection")
			return nil
		}
	}
	typ, mixed := "UNKNOWN", false
	for _, ib := range nc.ibs {
		nc.types = append(nc.types, nicType(ib))
	}
	for _, t := range nc.types {
		switch {
		case t == "UNKNOWN":
		case typ == "UNKNOWN":
			typ = t
		case t != typ:
			mixed = true
		}
		if mixed {
			break
		}
	}
	if mixed {
		fmt.Fprintln(warn, "# Warning: mixed NIC types detected during counter table selection")
	}
	nc.counters = bnxtCounters
	if typ == "IONIC" {
		nc.counters = ionicCounters
	}
	nc.counters = pickCounters(nc.counters, getenv("RCCL_TESTS_NIC_COUNTER_LIST"))
	for i := range nc.nics {
		nc.before = append(nc.before, nc.snapshot(i))
	}
	fmt.Fprintln(out, "# Network counter collection enabled (RCCL_TESTS_NET_COUNTER_ENABLE=1)")
	if getenv("NCCL_IB_HCA") != "" {
		fmt.Fprintln(out, "# Device list from NCCL_IB_HCA")
	}
	fmt.Fprintf(out, "# Node %s: lead rank %d collecting %d device(s):", nc.host, baseRank, len(nc.nics))
	for i, nic := range nc.nics {
		if nc.ibs[i] != "" {
			fmt.Fprintf(out, " %s(%s)", nc.ibs[i], nic)
		} else {
			fmt.Fprintf(out, " %s", nic)
		}
	}
	if mixed {
		typ = "MIXED"
	}
	fmt.Fprintf(out, "\n# NIC type: %s\n# Counters (%d):", typ, len(nc.counters))
	for _, c := range nc.counters {
		fmt.Fprintf(out, " %s", c.name)
	}
	fmt.Fprintln(out)
	return nc
}

// pickCounters keeps the counters RCCL_TESTS_NIC_COUNTER_LIST names (comma-separated), in its order; a name
// outside the table is read from the InfiniBand hw_counters. An empty list keeps the table.
func pickCounters(table []netCounter, list string) []netCounter {
	if strings.TrimSpace(list) == "" {
		return table
	}
	var out []netCounter
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		c := netCounter{name: name, src: srcIBHW}
		for _, t := range table {
			if t.name == name {
				c = t
			}
		}
		out = append(out, c)
	}
	return out
}

// ibBase splits an InfiniBand device "mlx5_0:2" into its name and port (1 by default).
func ibBase(ib string) string { b, _, _ := strings.Cut(ib, ":"); return b }

func ibPort(ib string) string {
	if _, p, ok := strings.Cut(ib, ":"); ok {
		if n, err := strconv.Atoi(p); err == nil && n > 0 {
			return p
		}
	}
	return "1"
}

// firstEntry is the first name in dir, in ls's order ("" when there is none).
func firstEntry(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	return entries[0].Name()
}

// nicType is rccl-tests' NIC type of an InfiniBand device: by its name, else by its driver.
func nicType(ib string) string {
	base := ibBase(ib)
	if strings.HasPrefix(base, "bnxt_re") {
		return "BNXT_RE"
	}
	link, err := os.Readlink(filepath.Join(SysRoot, "class/infiniband", base, "device/driver"))
	if err != nil {
		return "UNKNOWN"
	}
	switch filepath.Base(link) {
	case "bnxt_re", "bnxt_en":
		return "BNXT_RE"
	case "ionic":
		return "IONIC"
	}
	return "UNKNOWN"
}

// snapshot reads NIC i's counters.
func (nc *NetCounters) snapshot(i int) nicSnapshot {
	s := nicSnapshot{at: time.Now(), typ: nc.types[i], values: map[string]uint64{}}
	nc.readEthtool(nc.nics[i], s.values)
	ib := nc.ibs[i]
	if ib == "" {
		return s
	}
	port := filepath.Join(SysRoot, "class/infiniband", ibBase(ib), "ports", ibPort(ib), "hw_counters")
	dev := filepath.Join(SysRoot, "class/infiniband", ibBase(ib), "hw_counters")
	debug := map[string]bool{}
	for _, c := range nc.counters {
		switch c.src {
		case srcIBHW:
			for _, name := range []string{c.name, c.fallback} {
				if name == "" {
					continue
				}
				if v, ok := readCounterFile(filepath.Join(port, name)); ok {
					s.values[c.name] = v
					break
				}
				if v, ok := readCounterFile(filepath.Join(dev, name)); ok {
					s.values[c.name] = v
					break
				}
			}
		case srcDebugfs:
			debug[c.name] = true
		}
	}
	if len(debug) > 0 {
		readDebugfs(filepath.Join(SysRoot, "kernel/debug/bnxt_re", ibBase(ib), "info"), debug, s.values)
	}
	return s
}

func readCounterFile(path string) (uint64, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return v, err == nil
}

// readDebugfs reads "name: value" or "name = value" lines of bnxt_re's info file.
func readDebugfs(path string, want map[string]bool, into map[string]uint64) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			k, v, ok = strings.Cut(sc.Text(), "=")
		}
		if !ok {
			f := strings.Fields(sc.Text())
			if len(f) < 2 {
				continue
			}
			k, v = f[0], f[1]
		}
		k = strings.TrimSpace(k)
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil && want[k] {
			into[k] = n
		}
	}
}

// readEthtool runs ethtool -S (bounded) for the ethtool counters, where ethtool is installed.
func (nc *NetCounters) readEthtool(nic string, into map[string]uint64) {
	var need bool
	for _, c := range nc.counters {
		need = need || c.src == srcEthtool
	}
	if !need || nic == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ethtool", "-S", nic).Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		for _, c := range nc.counters {
			if c.src == srcEthtool && (k == c.name && !c.prefix || c.prefix && strings.HasPrefix(k, c.name)) {
				into[k] = n
				break
			}
		}
	}
}

// Finish reads the counters again and prints rccl-tests' NET_COUNTER_TABLE.
func (nc *NetCounters) Finish(out io.Writer) {
	if nc == nil {
		return
	}
	if len(nc.counters) == 0 || len(nc.nics) == 0 {
		fmt.Fprintf(out, "NET_COUNTER_TABLE: node=%s rank=%d status=NO_DATA\n", nc.host, nc.baseRank)
		return
	}
	n, m := len(nc.nics), len(nc.counters)
	deltas := make([][]uint64, n)
	rates := make([][]float64, n)
	durs := make([]float64, n)
	labels := make([]string, n)
	typ, mixed := "UNKNOWN", false
	for i := range nc.nics {
		after := nc.snapshot(i)
		b := nc.before[i]
		durs[i] = float64(after.at.Sub(b.at).Microseconds()) / 1e6
		deltas[i], rates[i] = make([]uint64, m), make([]float64, m)
		for j, c := range nc.counters {
			if c.prefix {
				for k, v := range after.values {
					if strings.HasPrefix(k, c.name) {
						deltas[i][j] += v - b.values[k]
					}
				}
			} else {
				deltas[i][j] = after.values[c.name] - b.values[c.name]
			}
			if durs[i] > 0 {
				rates[i][j] = float64(deltas[i][j]) / durs[i]
			}
		}
		switch {
		case b.typ == "UNKNOWN" || mixed:
		case typ == "UNKNOWN":
			typ = b.typ
		case b.typ != typ:
			mixed = true
		}
		switch {
		case nc.ibs[i] != "" && nc.nics[i] != "":
			labels[i] = nc.ibs[i] + "(" + nc.nics[i] + ")"
		case nc.ibs[i] != "":
			labels[i] = nc.ibs[i]
		default:
			labels[i] = nc.nics[i]
		}
	}
	if mixed {
		typ = "MIXED"
	}
	nicW := len("Device")
	for _, l := range labels {
		nicW = max(nicW, len(l))
	}
	nicW += 2
	cntW, rtW := make([]int, m), make([]int, m)
	sep := strings.Repeat("-", nicW)
	for j, c := range nc.counters {
		cntW[j], rtW[j] = 5, 6
		for i := range n {
			cntW[j] = max(cntW[j], len(strconv.FormatUint(deltas[i][j], 10)))
			rtW[j] = max(rtW[j], len(strconv.FormatFloat(rates[i][j], 'f', 2, 64)))
		}
		if pair := cntW[j] + 2 + rtW[j]; len(c.name) > pair {
			rtW[j] += len(c.name) - pair
		}
		sep += "--" + strings.Repeat("-", cntW[j]) + "--" + strings.Repeat("-", rtW[j])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nNET_COUNTER_TABLE: node=%s  rank=%d  duration_sec=%.3f  nic_type=%s\n%s\n", nc.host, nc.baseRank,
		durs[0], typ, sep)
	fmt.Fprintf(&b, "%-*s", nicW, "Device")
	for j, c := range nc.counters {
		fmt.Fprintf(&b, "  %-*s", cntW[j]+2+rtW[j], c.name)
	}
	fmt.Fprintf(&b, "\n%-*s", nicW, "")
	for j := range nc.counters {
		fmt.Fprintf(&b, "  %*s  %*s", cntW[j], "count", rtW[j], "rate/s")
	}
	fmt.Fprintf(&b, "\n%s\n", sep)
	for i := range n {
		fmt.Fprintf(&b, "%-*s", nicW, labels[i])
		for j := range nc.counters {
			fmt.Fprintf(&b, "  %*d  %*.2f", cntW[j], deltas[i][j], rtW[j], rates[i][j])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s\n\n", sep)
	fmt.Fprint(out, b.String())
}
