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

{{/* The Secret with the scheduler's serving certificate, if any: given, or
cert-manager's. */}}
{{- define "fluence.tlsSecret" -}}
{{- if .Values.inspect.tlsSecret -}}
{{- .Values.inspect.tlsSecret -}}
{{- else if .Values.inspect.certManager.enabled -}}
{{- printf "%s-tls" (include "fluence.fullname" .) -}}
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
{{- range .Values.extraArgs -}}
{{- $flag := regexReplaceAll "=.*" . "" -}}
{{- if has $flag (list "--config" "--secure-port" "--v" "-v" "--tls-cert-file" "--tls-private-key-file") -}}
{{- fail (printf "extraArgs has %s, which the chart sets itself: set its value instead (--config: the chart's values; --secure-port: securePort; --v: logVerbosity; the TLS files: inspect.tlsSecret or inspect.certManager)" $flag) -}}
{{- end -}}
{{- end -}}
{{- with .Values.leaderElection -}}
{{- if and .enabled (ge (include "fluence.seconds" .renewDeadline | float64) (include "fluence.seconds" .leaseDuration | float64)) -}}
{{- fail (printf "leaderElection.renewDeadline (%s) must be shorter than leaseDuration (%s): kube-scheduler refuses it" .renewDeadline .leaseDuration) -}}
{{- end -}}
{{- if and .enabled (ge (mulf (include "fluence.seconds" .retryPeriod | float64) 1.2) (include "fluence.seconds" .renewDeadline | float64)) -}}
{{- fail (printf "leaderElection.retryPeriod (%s) must be under renewDeadline (%s) divided by 1.2: kube-scheduler refuses it" .retryPeriod .renewDeadline) -}}
{{- end -}}
{{- end -}}
{{- if .Values.inspect.certManager.enabled -}}
{{- if or .Values.inspect.tlsSecret .Values.inspect.caBundle -}}
{{- fail "inspect.certManager.enabled is true with inspect.tlsSecret or inspect.caBundle set: cert-manager gives both; set one way" -}}
{{- end -}}
{{- if not .Values.inspect.certManager.issuerRef.name -}}
{{- fail "inspect.certManager.enabled is true but inspect.certManager.issuerRef.name is empty: name the Issuer or ClusterIssuer that signs the scheduler's certificate" -}}
{{- end -}}
{{- end -}}
{{- if .Values.oneScheduler -}}
{{- if lt (int .Values.replicas) 2 -}}
{{- fail (printf "oneScheduler is true but replicas is %d: in one-scheduler mode fluence's own pods are scheduled by fluence, so at least 2 replicas must run for one to schedule the other's successor (docs/install.md, One-scheduler mode)" (int .Values.replicas)) -}}
{{- end -}}
{{- if not .Values.podDisruptionBudget.enabled -}}
{{- fail "oneScheduler is true but podDisruptionBudget.enabled is false: in one-scheduler mode a drain must leave a running replica to schedule the evicted one's successor" -}}
{{- end -}}
{{- if ge (int (.Values.podDisruptionBudget.maxUnavailable | default 1)) (int .Values.replicas) -}}
{{- fail (printf "oneScheduler is true but podDisruptionBudget.maxUnavailable (%d) is not below replicas (%d): a drain could evict every replica, leaving nothing to schedule their successors" (int .Values.podDisruptionBudget.maxUnavailable) (int .Values.replicas)) -}}
{{- end -}}
{{- end -}}
{{- if eq .Values.schedulerName "default-scheduler" -}}
{{- fail "schedulerName must not be default-scheduler: fluence runs beside the stock scheduler, under its own name" -}}
{{- end -}}
{{- end -}}

{{/* A Go duration of hours, minutes, seconds and milliseconds (15s, 1m30s,
500ms) in seconds, for comparing durations in templates. */}}
{{- define "fluence.seconds" -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9.]+(ms|h|m|s)" . -1 -}}
{{- $n := regexFind "^[0-9.]+" . | float64 -}}
{{- $unit := regexReplaceAll "^[0-9.]+" . "" -}}
{{- $scale := get (dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001) $unit -}}
{{- $total = addf $total (mulf $n $scale) -}}
{{- end -}}
{{- $total -}}
{{- end -}}
