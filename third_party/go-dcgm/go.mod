module github.com/NVIDIA/go-dcgm

go 1.26.7

require (
	github.com/bits-and-blooms/bitset v1.25.0
	github.com/gorilla/mux v1.8.1
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
