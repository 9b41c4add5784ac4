{{/* The chart's name. */}}
{{- define "gpuwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's base name for every resource. */}}
{{- define "gpuwatch.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Common labels; the selector labels (name, instance) are added per workload. */}}
{{- define "gpuwatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: gpuwatch
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gpuwatch.serverSelector" -}}
app.kubernetes.io/name: {{ include "gpuwatch.name" . }}-server
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpuwatch.agentSelector" -}}
app.kubernetes.io/name: {{ include "gpuwatch.name" . }}-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpuwatch.serverImage" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "gpuwatch.agentImage" -}}
{{ .Values.agent.image.repository }}:{{ .Values.agent.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The server's URL scheme: https with server.tls.secretName. */}}
{{- define "gpuwatch.serverScheme" -}}
{{ if .Values.server.tls.secretName }}https{{ else }}http{{ end }}
{{- end -}}

{{/* The server's URL inside the cluster. */}}
{{- define "gpuwatch.serverURL" -}}
{{ include "gpuwatch.serverScheme" . }}://{{ include "gpuwatch.fullname" . }}-server.{{ .Release.Namespace }}.svc:{{ .Values.server.port }}
{{- end -}}

{{/*
Where agents push health reports (--server): the Service with one replica;
each replica's stable address behind the headless Service with more, so that
the elected leader's followers hold every node's latest report too.
*/}}
{{- define "gpuwatch.healthServers" -}}
{{- $replicas := int .Values.server.replicas -}}
{{- if le $replicas 1 -}}
{{ include "gpuwatch.serverURL" . }}
{{- else -}}
{{- $fullname := include "gpuwatch.fullname" . -}}
{{- $scheme := include "gpuwatch.serverScheme" . -}}
{{- $urls := list -}}
{{- range $i := until $replicas -}}
{{- $urls = append $urls (printf "%s://%s-server-%d.%s-server-headless.%s.svc:%v" $scheme $fullname $i $fullname $.Release.Namespace $.Values.server.port) -}}
{{- end -}}
{{ join "," $urls }}
{{- end -}}
{{- end -}}

{{/* Replicas elect a leader; they need a store they share. */}}
{{- define "gpuwatch.leaderElect" -}}
{{- if gt (int .Values.server.replicas) 1 -}}
{{- if not .Values.server.storeURL -}}
{{- fail "server.replicas > 1 needs server.storeURL: the replicas share one VictoriaMetrics or Prometheus (an embedded store per replica would hold only the samples sent to it); see docs/kubernetes.md, \"High availability\"" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/*
A secret kept across upgrades: the value given, else the one already in the
cluster's Secret, else a new random one. Arguments: (list $ secretName key value).
*/}}
{{- define "gpuwatch.secretValue" -}}
{{- $ctx := index . 0 -}}
{{- $name := index . 1 -}}
{{- $key := index . 2 -}}
{{- $given := index . 3 -}}
{{- if $given -}}
{{- $given -}}
{{- else -}}
{{- $existing := lookup "v1" "Secret" $ctx.Release.Namespace $name -}}
{{- if and $existing (index $existing.data $key) -}}
{{- index $existing.data $key | b64dec -}}
{{- else -}}
{{- randAlphaNum 43 -}}
{{- end -}}
{{- end -}}
{{- end -}}
