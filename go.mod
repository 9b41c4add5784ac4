module github.com/gpuwatch/gpuwatch

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.3-0 // indirect
	github.com/prometheus/procfs v0.23.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
