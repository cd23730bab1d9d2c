// Command featuregates prints, as JSON, the feature gates kube-scheduler's binary knows at its own
// version (name, default, stability, locked) and the dependencies between them; kubeberth's
// operator/kubeberth/features_v1_37.json is its output (`go run ./cmd/featuregates`).
package main

import (
	"encoding/json"
	"os"
	"sort"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features"
)

type gate struct {
	Name       string   `json:"name"`
	Default    bool     `json:"default"`
	PreRelease string   `json:"preRelease"`
	Locked     bool     `json:"lockedToDefault,omitempty"`
	DependsOn  []string `json:"dependsOn,omitempty"`
}

func main() {
	fg := utilfeature.DefaultMutableFeatureGate
	deps := fg.Dependencies()
	var out []gate
	for name, spec := range fg.GetAll() {
		g := gate{Name: string(name), Default: spec.Default, PreRelease: string(spec.PreRelease), Locked: spec.LockToDefault}
		for _, d := range deps[name] {
			g.DependsOn = append(g.DependsOn, string(d))
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(map[string]any{"version": fg.EmulationVersion().String(), "gates": out}); err != nil {
		panic(err)
	}
}
