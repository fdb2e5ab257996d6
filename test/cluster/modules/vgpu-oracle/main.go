// vgpu-oracle checks the vGPU shares in a cluster with Volcano's own code
// (volcano.sh/volcano, pkg/scheduler/api/devices/nvidia/vgpu, the version
// pinned in go.mod), not with Muster's reading of the protocol.
//
// Input on stdin: {"nodes": [...], "pods": [...]}, core/v1 objects as the
// API server returns them. For every node the device plugin registered
// (vgpu.NewGPUDevices), every pod bound there and not finished is counted
// in with vgpu's AddResource, from its volcano.sh/vgpu-ids-new
// annotation. Then:
//
//   - no GPU holds more pods than its split count, more memory than it
//     has, or more than 100% of its cores;
//   - every share names a GPU of the pod's node;
//   - every pod got what it asked (devices.ExtractResourceRequest): per
//     container that asks, as many distinct GPUs as vgpu-number, on each
//     the memory asked (absolute, or the percentage of that GPU's memory
//     as Volcano computes it) and the cores asked.
//
// It prints one line per GPU and one per finding, and exits 1 if there is
// any finding (2 on bad input).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/api/devices"
	"volcano.sh/volcano/pkg/scheduler/api/devices/nvidia/vgpu"
)

const (
	countName   = "volcano.sh/vgpu-number"
	memoryName  = "volcano.sh/vgpu-memory"
	percentName = "volcano.sh/vgpu-memory-percentage"
	coreName    = "volcano.sh/vgpu-cores"
)

type input struct {
	Nodes []v1.Node `json:"nodes"`
	Pods  []v1.Pod  `json:"pods"`
}

type oracle struct {
	findings int
}

func (o *oracle) find(format string, args ...interface{}) {
	o.findings++
	fmt.Printf("FINDING "+format+"\n", args...)
}

func running(p *v1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed
}

// checkPod compares what pod p asked with the shares it holds on gs.
func (o *oracle) checkPod(p *v1.Pod, gs *vgpu.GPUDevices) {
	ids, ok := p.Annotations[vgpu.AssignedIDsAnnotations]
	asks := devices.ExtractResourceRequest(p, vgpu.NvidiaGPUDevice, countName, memoryName, percentName, coreName)
	name := p.Namespace + "/" + p.Name
	if !ok {
		if len(asks) > 0 {
			o.find("%s asks for vGPUs and has no %s", name, vgpu.AssignedIDsAnnotations)
		}
		return
	}
	got := vgpu.DecodePodDevices(ids)
	if len(got) != len(asks) {
		o.find("%s: %d containers ask for vGPUs, %d hold shares", name, len(asks), len(got))
		return
	}
	for c, ask := range asks {
		if int(ask.Nums) != len(got[c]) {
			o.find("%s container %d: asked %d GPUs, holds %d", name, c, ask.Nums, len(got[c]))
		}
		seen := map[string]bool{}
		for _, share := range got[c] {
			dev := byUUID(gs, share.UUID)
			if dev == nil {
				o.find("%s container %d: GPU %s is not on node %s", name, c, share.UUID, gs.Name)
				continue
			}
			if seen[share.UUID] {
				o.find("%s container %d: GPU %s twice", name, c, share.UUID)
			}
			seen[share.UUID] = true
			want := uint(ask.Memreq)
			if ask.MemPercentagereq != vgpu.DefaultMemPercentage {
				want = uint(float64(dev.Memory) * float64(ask.MemPercentagereq) / 100.0)
			}
			if share.Usedmem != want || share.Usedcores != uint(ask.Coresreq) {
				o.find("%s container %d on %s: holds %d MiB %d%% cores, asked %d MiB %d%%", name, c,
					share.UUID, share.Usedmem, share.Usedcores, want, ask.Coresreq)
			}
		}
	}
}

func byUUID(gs *vgpu.GPUDevices, uuid string) *vgpu.GPUDevice {
	for _, d := range gs.Device {
		if d.UUID == uuid {
			return d
		}
	}
	return nil
}

func (o *oracle) checkNode(n *v1.Node, pods []v1.Pod) {
	gs := vgpu.NewGPUDevices(n.Name, n)
	if gs == nil {
		return // not registered: whole-GPU accounting, nothing to check here
	}
	for i := range pods {
		if p := &pods[i]; running(p) && p.Spec.NodeName == n.Name {
			gs.AddResource(p)
			o.checkPod(p, gs)
		}
	}
	ids := make([]int, 0, len(gs.Device))
	for id := range gs.Device {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		d := gs.Device[id]
		fmt.Printf("%s gpu %d %s: pods %d/%d memory %d/%d cores %d/100\n", n.Name, id, d.UUID,
			d.UsedNum, d.Number, d.UsedMem, d.Memory, d.UsedCore)
		if d.UsedNum > d.Number || d.UsedMem > d.Memory || d.UsedCore > 100 {
			o.find("%s gpu %d %s is over-committed", n.Name, id, d.UUID)
		}
	}
}

func main() {
	klog.LogToStderr(true)
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		fmt.Fprintln(os.Stderr, "vgpu-oracle: bad input:", err)
		os.Exit(2)
	}
	vgpu.VGPUEnable = true
	o := &oracle{}
	for i := range in.Nodes {
		o.checkNode(&in.Nodes[i], in.Pods)
	}
	if o.findings > 0 {
		fmt.Printf("vgpu-oracle: %d finding(s)\n", o.findings)
		os.Exit(1)
	}
	fmt.Println("vgpu-oracle: ok")
}
