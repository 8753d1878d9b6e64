{{/*
One control-plane Pod template, shared by every workload. Arguments (a dict):
  root          the chart's context
  component     gateway | event-ingest | control | session | single
  command       the container's command (a list)
  env           extra environment (YAML text)
  resources     the container's resources
  gateway       true when the Pod serves the gateway's HTTP (selected by the gateway Service)
  session       true when it runs the session service (its ServiceAccount, templates, agent secret)
  natsUser      its NATS user (every service's own); the single mode, which runs them all, mounts every user's password instead
*/}}
{{- define "svc.podTemplate" -}}
{{- $root := .root -}}
metadata:
  labels:
    {{- include "svc.selectorLabels" (dict "root" $root "component" .component) | nindent 4 }}
    {{- if .gateway }}
    svc.dev/serves-gateway: "true"
    {{- end }}
    svc.dev/metrics: "true"
  {{- with $root.Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- if .session }}
  serviceAccountName: {{ include "svc.sessionServiceAccount" $root }}
  {{- else }}
  automountServiceAccountToken: false
  {{- end }}
  securityContext:
    {{- include "svc.podSecurityContext" $root | nindent 4 }}
  {{- include "svc.scheduling" $root | nindent 2 }}
  containers:
    - name: {{ .component }}
      image: {{ include "svc.image" $root }}
      imagePullPolicy: {{ $root.Values.image.pullPolicy }}
      command: {{ toJson .command }}
      env:
        {{- include "svc.commonEnv" $root | nindent 8 }}
        - name: SVC_HEALTH_PORT
          value: "8081"
        {{- if .natsUser }}
        {{- include "svc.natsUserEnv" (dict "root" $root "user" .natsUser) | nindent 8 }}
        {{- else }}
        - name: SVC_NATS_CREDENTIALS_DIR
          value: /etc/svc/nats-credentials
        {{- end }}
        {{- with .env }}
        {{- . | nindent 8 }}
        {{- end }}
      {{- if .session }}
      {{- include "svc.sessionEnvFrom" $root | nindent 6 }}
      {{- end }}
      ports:
        {{- if .gateway }}
        - name: http
          containerPort: 8080
        # The worker port: sandboxes' sidecars only (their NetworkPolicy admits this port alone).
        - name: worker
          containerPort: 8082
        {{- end }}
        - name: health
          containerPort: 8081
      readinessProbe:
        httpGet: { path: /readyz, port: health }
        periodSeconds: 5
      livenessProbe:
        httpGet: { path: /healthz, port: health }
        periodSeconds: 10
        failureThreshold: 3
      resources:
        {{- toYaml .resources | nindent 8 }}
      securityContext:
        {{- include "svc.containerSecurityContext" $root | nindent 8 }}
      volumeMounts:
        {{- include "svc.volumeMounts" (dict "root" $root "withTemplates" .session "natsCredentials" (not .natsUser)) | nindent 8 }}
  volumes:
    {{- include "svc.volumes" (dict "root" $root "withTemplates" .session "natsCredentials" (not .natsUser)) | nindent 4 }}
{{- end -}}

{{/* A PodDisruptionBudget: `budget` is {minAvailable} or {maxUnavailable}. */}}
{{- define "svc.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "svc.componentName" (dict "root" .root "component" .component) }}
  labels:
    {{- include "svc.labels" .root | nindent 4 }}
spec:
  {{- toYaml .budget | nindent 2 }}
  selector:
    matchLabels:
      {{- include "svc.selectorLabels" (dict "root" .root "component" .component) | nindent 6 }}
{{- end -}}
