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
