{{/* Every name this chart gives, in one place. */}}

{{- define "svc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "svc.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "svc.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "svc.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's resources: <fullname>-<component>. */}}
{{- define "svc.componentName" -}}
{{- printf "%s-%s" (include "svc.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "svc.sessionServiceAccount" -}}{{ include "svc.componentName" (dict "root" . "component" "session") }}{{- end -}}
{{- define "svc.gatewayService" -}}{{ include "svc.componentName" (dict "root" . "component" "gateway") }}{{- end -}}
{{- define "svc.natsName" -}}{{ include "svc.componentName" (dict "root" . "component" "nats") }}{{- end -}}
{{- define "svc.postgresName" -}}{{ include "svc.componentName" (dict "root" . "component" "postgres") }}{{- end -}}
{{- define "svc.natsAuthSecret" -}}{{ .Values.nats.auth.existingSecret | default (include "svc.componentName" (dict "root" . "component" "nats-auth")) }}{{- end -}}
{{- define "svc.natsAuthConfigMap" -}}{{ include "svc.componentName" (dict "root" . "component" "nats-authorization") }}{{- end -}}
{{/* The NATS users, in the order of libs/bus's nats-auth.ts. */}}
{{- define "svc.natsUsers" -}}gateway event-ingest control session operator{{- end -}}
{{/* The environment variable the NATS config reads a user's password from. */}}
{{- define "svc.natsPasswordVariable" -}}SVC_NATS_PASSWORD_{{ . | upper | replace "-" "_" }}{{- end -}}
{{- define "svc.secretName" -}}{{ include "svc.componentName" (dict "root" . "component" "secrets") }}{{- end -}}

{{- define "svc.labels" -}}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component. */}}
{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "svc.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The NATS URL: the bundled server's, or the one given. */}}
{{- define "svc.natsUrl" -}}
{{- if .Values.nats.bundled.enabled -}}
nats://{{ include "svc.natsName" . }}.{{ .Release.Namespace }}.svc:4222
{{- else -}}
{{ .Values.nats.url }}
{{- end -}}
{{- end -}}

{{/* Each stream's replicas: as set, else 3 on the user's NATS (a cluster in production), 1 on the bundled single server. */}}
{{- define "svc.jetstreamReplicas" -}}
{{- if .Values.nats.jetstreamReplicas -}}
{{ .Values.nats.jetstreamReplicas }}
{{- else if .Values.nats.bundled.enabled -}}
1
{{- else -}}
3
{{- end -}}
{{- end -}}

{{/* The gateway as sandboxes and clients reach it. */}}
{{- define "svc.gatewayUrl" -}}
{{- if .Values.gateway.publicUrl -}}
{{ .Values.gateway.publicUrl }}
{{- else -}}
http://{{ include "svc.gatewayService" . }}.{{ .Release.Namespace }}.svc:{{ .Values.gateway.service.port }}
{{- end -}}
{{- end -}}

{{/* The gateway's worker port as sandboxes reach it (their sidecars' control plane URL): never the public one. */}}
{{- define "svc.gatewayWorkerUrl" -}}
http://{{ include "svc.gatewayService" . }}.{{ .Release.Namespace }}.svc:{{ .Values.gateway.service.workerPort }}
{{- end -}}

{{/* The names the gateway's public listener answers to, beside its public URL's: its Service's in-cluster names, and yours. */}}
{{- define "svc.gatewayAllowedHosts" -}}
{{- $service := include "svc.gatewayService" . -}}
{{- $names := list $service (printf "%s.%s" $service .Release.Namespace) (printf "%s.%s.svc" $service .Release.Namespace) (printf "%s.%s.svc.cluster.local" $service .Release.Namespace) -}}
{{- concat $names .Values.gateway.allowedHosts | join "," -}}
{{- end -}}

{{/* The Secret and key holding the database URL. */}}
{{- define "svc.databaseSecret" -}}
{{- if .Values.postgres.existingSecret -}}
name: {{ .Values.postgres.existingSecret }}
key: {{ .Values.postgres.existingSecretKey }}
{{- else -}}
name: {{ include "svc.secretName" . }}
key: database-url
{{- end -}}
{{- end -}}

{{/* Non-root, no privilege escalation, nothing writable but /tmp: every control-plane container. */}}
{{- define "svc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "svc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The environment every service shares. */}}
{{- define "svc.commonEnv" -}}
- name: SVC_NATS_URL
  value: {{ include "svc.natsUrl" . | quote }}
- name: SVC_JETSTREAM_REPLICAS
  value: {{ include "svc.jetstreamReplicas" . | quote }}
- name: SVC_DATABASE_URL
  valueFrom:
    secretKeyRef:
{{ include "svc.databaseSecret" . | indent 6 }}
{{- if and .Values.postgres.existingSecret .Values.postgres.migrationSecretKey }}
- name: SVC_DATABASE_MIGRATION_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.postgres.existingSecret }}
      key: {{ .Values.postgres.migrationSecretKey }}
{{- end }}
- name: SVC_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.tracing.otlpEndpoint }}
- name: SVC_OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: SVC_OTEL_TRACES_SAMPLE_PERCENT
  value: {{ $.Values.tracing.samplePercent | quote }}
{{- end }}
- name: SVC_INSTANCE
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- /* The gateway's address for people (links in notifications point there) and the key the
       control service signs those links with and the gateway checks them with. */}}
- name: SVC_GATEWAY_PUBLIC_URL
  value: {{ include "svc.gatewayUrl" . | quote }}
- name: SVC_DECISION_LINK_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.decisionLinkSecret" . }}
      key: key
{{- end -}}

{{/* The Secret holding the key the gateway signs who decides with, and control checks it with (docs/nats-security.md). */}}
{{- define "svc.userAssertionSecret" -}}
{{ include "svc.fullname" . }}-user-assertions
{{- end -}}

{{/* The user-assertion key, for the gateway's and the control service's environment only. */}}
{{- define "svc.userAssertionEnv" -}}
- name: SVC_USER_ASSERTION_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.userAssertionSecret" . }}
      key: key
{{- end -}}

{{/* The Secret holding the decision-link signing key. */}}
{{- define "svc.decisionLinkSecret" -}}
{{ include "svc.fullname" . }}-decision-links
{{- end -}}

{{/* The Secret holding the audit key: the operator's (control.audit.existingSecret), or the chart's. */}}
{{- define "svc.auditKeySecret" -}}
{{ .Values.control.audit.existingSecret | default (printf "%s-audit-key" (include "svc.fullname" .)) }}
{{- end -}}

{{/* The control service's own environment (its Pods and the single mode's): the audit trail's keys and head interval. */}}
{{- define "svc.controlEnv" -}}
{{ include "svc.userAssertionEnv" . }}
- name: SVC_AUDIT_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.auditKeySecret" . }}
      key: {{ ternary .Values.control.audit.existingSecretKey "key" (ne .Values.control.audit.existingSecret "") | quote }}
- name: SVC_AUDIT_PREVIOUS_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.auditKeySecret" . }}
      key: {{ .Values.control.audit.previousKeysSecretKey | quote }}
      optional: true
- name: SVC_AUDIT_HEAD_INTERVAL_S
  value: {{ .Values.control.audit.headIntervalSeconds | quote }}
{{- end -}}

{{/* The NATS user of a service Pod (`user`): its name, and its password from the Secret. */}}
{{- define "svc.natsUserEnv" -}}
- name: SVC_NATS_USER
  value: {{ .user | quote }}
- name: SVC_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.natsAuthSecret" .root }}
      key: {{ .user | quote }}
{{- end -}}

{{/* The model proxy's keys: the gateway's (and the single mode's) Pods only. */}}
{{- define "svc.modelProxyEnv" -}}
{{- range $api, $settings := dict "ANTHROPIC" .Values.modelProxy.anthropic "OPENAI" .Values.modelProxy.openai "GEMINI" .Values.modelProxy.gemini }}
- name: SVC_{{ $api }}_UPSTREAM_URL
  value: {{ $settings.upstreamUrl | quote }}
{{- if $settings.existingSecret }}
- name: SVC_{{ $api }}_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $settings.existingSecret | quote }}
      key: {{ $settings.existingSecretKey | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "svc.gatewayEnv" -}}
- name: SVC_GATEWAY_HOST
  value: "0.0.0.0"
- name: SVC_GATEWAY_PORT
  value: "8080"
- name: SVC_GATEWAY_WORKER_PORT
  value: "8082"
- name: SVC_GATEWAY_ALLOWED_HOSTS
  value: {{ include "svc.gatewayAllowedHosts" . | quote }}
{{ include "svc.userAssertionEnv" . }}
- name: SVC_OIDC_ISSUER
  value: {{ .Values.oidc.issuer | quote }}
- name: SVC_OIDC_AUDIENCE
  value: {{ .Values.oidc.audience | quote }}
- name: SVC_ADMIN_CLAIM
  value: {{ .Values.oidc.adminClaim | quote }}
- name: SVC_TRUSTED_PROXIES
  value: {{ .Values.gateway.trustedProxies | quote }}
- name: SVC_CORS_ORIGINS
  value: {{ .Values.gateway.corsOrigins | quote }}
- name: SVC_RATE_LIMIT_MAX
  value: {{ .Values.gateway.rateLimit.max | quote }}
- name: SVC_RATE_LIMIT_WINDOW_MS
  value: {{ .Values.gateway.rateLimit.windowMs | quote }}
{{- $refused := list "kubernetes.default.svc" }}
{{- if .Values.postgres.bundled.enabled }}
{{- $refused = append $refused (printf "%s.%s.svc:5432" (include "svc.postgresName" .) .Release.Namespace) }}
{{- end }}
- name: SVC_EGRESS_REFUSED
  value: {{ concat $refused .Values.gateway.egressRefused | join "," | quote }}
- name: SVC_EGRESS_ALLOWED_CIDRS
  value: {{ .Values.gateway.egressAllowedCidrs | join "," | quote }}
{{ include "svc.modelProxyEnv" . }}
{{- end -}}

{{- define "svc.sessionEnv" -}}
- name: SVC_SANDBOX_PROVIDER
  value: kubernetes
- name: SVC_SANDBOX_NAMESPACE
  value: {{ .Values.sandbox.namespace | quote }}
- name: SVC_SANDBOX_IMAGE
  value: {{ .Values.sandbox.image | quote }}
- name: SVC_SANDBOX_CONTROL_PLANE_URL
  value: {{ include "svc.gatewayWorkerUrl" . | quote }}
- name: SVC_SIDECAR_BINARY
  value: /opt/svc/svc-sidecar-linux-amd64
- name: SVC_SIDECAR_LOST_AFTER_MS
  value: {{ .Values.session.sidecarLostAfterMs | quote }}
{{- if .Values.session.templatesConfigMap }}
- name: SVC_TEMPLATES_DIR
  value: /etc/svc/templates
{{- end }}
{{- end -}}

{{- define "svc.sessionEnvFrom" -}}
{{- if .Values.session.agentSecret }}
envFrom:
  - secretRef:
      name: {{ .Values.session.agentSecret }}
{{- end }}
{{- end -}}

{{/* The volumes a control-plane Pod needs with a read-only root: /tmp, and the templates. */}}
{{- define "svc.volumes" -}}
- name: tmp
  emptyDir: {}
{{- if .natsCredentials }}
- name: nats-credentials
  secret:
    secretName: {{ include "svc.natsAuthSecret" .root }}
{{- end }}
{{- if and .withTemplates .root.Values.session.templatesConfigMap }}
- name: templates
  configMap:
    name: {{ .root.Values.session.templatesConfigMap }}
{{- end }}
{{- end -}}

{{- define "svc.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .natsCredentials }}
- name: nats-credentials
  mountPath: /etc/svc/nats-credentials
  readOnly: true
{{- end }}
{{- if and .withTemplates .root.Values.session.templatesConfigMap }}
- name: templates
  mountPath: /etc/svc/templates
  readOnly: true
{{- end }}
{{- end -}}

{{- define "svc.scheduling" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}
