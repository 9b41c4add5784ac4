module github.com/gpuwatch/gpuwatch

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.3-0
	github.com/prometheus/procfs v0.23.0
	gopkg.in/yaml.v3 v3.0.1
	pgregory.net/rapid v1.3.0
)

require golang.org/x/sync v0.24.0 // indirect
