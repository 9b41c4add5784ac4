// Command gpx_gpuwatch is the backend of gpuwatch's Grafana data source:
// Grafana starts it (plugin.json's executable, built as
// gpx_gpuwatch_<os>_<arch>) and talks to it over the plugin SDK's gRPC
// protocol. It is not meant to be run by hand.
package main

import (
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	gpuwatchds "github.com/gpuwatch/gpuwatch/datasource"
)

func main() {
	if err := datasource.Manage(gpuwatchds.PluginID, gpuwatchds.NewDatasource, datasource.ManageOpts{}); err != nil {
		log.DefaultLogger.Error("the gpuwatch data source stopped", "error", err.Error())
		os.Exit(1)
	}
}
