{{/* The manager's namespace. */}}
{{- define "kruise.namespace" -}}
{{ .Values.installation.namespace }}
{{- end -}}

{{/* Whether the gate named by .gate is on in featureGates, given its default .default. */}}
{{- define "kruise.gate" -}}
{{- $on := .default -}}
{{- range (splitList "," (.root.Values.featureGates | default "")) -}}
{{- $pair := splitList "=" (trim .) -}}
{{- if and (eq (len $pair) 2) (eq (first $pair) $.gate) -}}
{{- $on = eq (lower (trim (last $pair))) "true" -}}
{{- end -}}
{{- end -}}
{{- if $on }}true{{ end -}}
{{- end -}}

{{/* klog verbosity as a log filter: 0-2 info, 3-4 debug, 5 and above trace. */}}
{{- define "kruise.logFilter" -}}
{{- $level := int (toString .) -}}
{{- if ge $level 5 }}trace{{ else if ge $level 3 }}debug{{ else }}info{{ end -}}
{{- end -}}

{{- define "kruise.image" -}}
{{ .Values.manager.image.repository }}:{{ .Values.manager.image.tag }}
{{- end -}}

{{- define "kruise.labels" -}}
app.kubernetes.io/name: kruise
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* Restricted pod security for the manager and the daemon. */}}
{{- /* Upstream values this chart cannot honour: each fails the install, naming the key and
why, rather than being ignored (their defaults pass). */ -}}
{{- define "kruise.refusals" -}}
{{- if ne (toJson .Values.installation.roleListGroups) (toJson (list "*")) }}
{{- fail "installation.roleListGroups: narrowing the manager's list rule is not supported: its ClusterRole already names exactly the API groups its code reads; leave it ['*']" }}
{{- end }}
{{- if .Values.enableKubeCacheMutationDetector }}
{{- fail "enableKubeCacheMutationDetector: client-go's cache mutation detector is a Go debugging aid; kruise-rs has no such cache (its cached objects are immutable); leave it false" }}
{{- end }}
{{- if ne .Values.manager.pprofAddr "localhost:8090" }}
{{- fail "manager.pprofAddr: kruise-rs serves no pprof endpoint (Go's profiler); leave it at its default" }}
{{- end }}
{{- if ne .Values.daemon.pprofAddr "localhost:10222" }}
{{- fail "daemon.pprofAddr: kruise-daemon serves no pprof endpoint (Go's profiler); leave it at its default" }}
{{- end }}
{{- end -}}

{{- define "kruise.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
