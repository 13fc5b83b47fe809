{{/* The release's full name, used for every object the chart makes. */}}
{{- define "fluence.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "fluence.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "fluence.labels" -}}
{{ include "fluence.selectorLabels" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The scheduler's image: by digest when one is given, else by tag. */}}
{{- define "fluence.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- define "fluence.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "fluence.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Refuse combinations the schema cannot express. */}}
{{- define "fluence.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas is %d but leaderElection.enabled is false: replicas without leader election would place the same pods twice" (int .Values.replicas)) -}}
{{- end -}}
{{- if and .Values.plugin.rackLabel .Values.plugin.topologyLevels -}}
{{- fail "plugin.rackLabel and plugin.topologyLevels are both set: give one (rackLabel builds the zone and rack levels; list the rack label in topologyLevels instead)" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service) -}}
{{- fail "metrics.serviceMonitor.enabled is true but metrics.service is false: the ServiceMonitor scrapes the metrics Service" -}}
{{- end -}}
{{- if eq .Values.schedulerName "default-scheduler" -}}
{{- fail "schedulerName must not be default-scheduler: fluence runs beside the stock scheduler, under its own name" -}}
{{- end -}}
{{- end -}}
