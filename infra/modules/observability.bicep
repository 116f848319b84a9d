// Alerts and the operations workbook over the app's OpenTelemetry data in Application Insights
// (docs/adr/0012, docs/operations.md). The app exports with HASTE_OTEL_EXPORT=azure: custom
// metrics haste.* land in customMetrics (dimensions in customDimensions), step spans in requests
// (consumer/server) and dependencies (internal, and the SDK calls), log lines in traces.

param location string
param tags object
@description('Name stem of the alert rules, the action group and the workbook.')
param name string
@description('Resource id of the Application Insights component the rules query.')
param appInsightsId string
@description('Where alerts go by e-mail; empty: no e-mail receiver.')
param alertEmail string = ''
@description('Where alerts go by webhook (an incident tool, a chat hook); empty: no webhook receiver.')
@secure()
param alertWebhookUrl string = ''
@description('Failed share of ended jobs over an hour, in percent, above which the failure-rate alert fires.')
@minValue(1)
@maxValue(100)
param failureRatePercent int = 20
@description('Fewest ended jobs in the hour before the failure rate is judged (a few jobs are no rate).')
@minValue(1)
param failureRateMinJobs int = 5

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'ag-${name}'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'haste'
    enabled: true
    // A receiver only for each destination given.
    emailReceivers: empty(alertEmail) ? [] : [
      {
        name: 'email'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
    webhookReceivers: empty(alertWebhookUrl) ? [] : [
      {
        name: 'webhook'
        serviceUri: alertWebhookUrl
        useCommonAlertSchema: true
      }
    ]
  }
}

// One metric's total over the rule's window, by dimension: counters arrive as deltas.
var jobsFailedBy = 'customMetrics | where name == "haste.jobs.failed" | extend reasonClass = tostring(customDimensions.reason_class), backend = tostring(customDimensions.backend)'

var alerts = [
  {
    key: 'poison'
    severity: 1
    description: 'A queue message was given up on (poison): its job failed with the last error. Runbook: docs/operations.md#poison.'
    query: '${jobsFailedBy} | where reasonClass == "poison" | summarize poisoned = sum(valueSum) by backend | where poisoned > 0'
    window: 'PT15M'
  }
  {
    key: 'failure-rate'
    severity: 2
    description: 'More than ${failureRatePercent}% of the jobs that ended in the last hour failed. Runbook: docs/operations.md#failure-rate.'
    query: 'customMetrics | where name in ("haste.jobs.failed", "haste.jobs.succeeded") | extend backend = tostring(customDimensions.backend) | summarize failed = sumif(valueSum, name == "haste.jobs.failed"), ended = sum(valueSum) by backend | where ended >= ${failureRateMinJobs} and failed * 100.0 / ended > ${failureRatePercent}'
    window: 'PT1H'
  }
  {
    key: 'past-deadline'
    severity: 2
    description: 'Jobs ran past their deadline and were failed (by a step or the reconciler). Runbook: docs/operations.md#deadline.'
    query: '${jobsFailedBy} | where reasonClass == "deadline" | summarize expired = sum(valueSum) by backend | where expired > 0'
    window: 'PT15M'
  }
  {
    key: 'reconciler-errors'
    severity: 2
    description: 'The reconciler could not reach a source (the job store or a backend) for 15 minutes. Runbook: docs/operations.md#reconciler.'
    query: 'customMetrics | where name == "haste.reconcile.errors" | extend source = tostring(customDimensions.source) | summarize errors = sum(valueSum) by source | where errors >= 10'
    window: 'PT15M'
  }
]

resource rules 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = [
  for alert in alerts: {
    name: 'alert-${name}-${alert.key}'
    location: location
    tags: tags
    properties: {
      displayName: 'haste: ${alert.key}'
      description: alert.description
      severity: alert.severity
      enabled: true
      scopes: [
        appInsightsId
      ]
      evaluationFrequency: 'PT5M'
      windowSize: alert.window
      criteria: {
        allOf: [
          {
            query: alert.query
            timeAggregation: 'Count'
            operator: 'GreaterThan'
            threshold: 0
            failingPeriods: {
              numberOfEvaluationPeriods: 1
              minFailingPeriodsToAlert: 1
            }
          }
        ]
      }
      autoMitigate: true
      actions: {
        actionGroups: [
          actionGroup.id
        ]
      }
    }
  }
]

// The 3 a.m. questions (docs/operations.md), one query each.
var questions = [
  {
    title: 'Which jobs are stuck, where, since when (no step for 30 minutes, not ended)'
    query: 'union requests, dependencies | where timestamp > ago(3d) | extend job = tostring(customDimensions["haste.job_id"]) | where isnotempty(job) | summarize arg_max(timestamp, name, state = tostring(customDimensions["haste.state"]), backend = tostring(customDimensions["haste.backend"]), project = tostring(customDimensions["haste.project"])) by job | where state !in ("succeeded", "failed", "cancelled") and timestamp < ago(30m) | project job, project, backend, state, lastStep = name, since = timestamp | order by since asc'
  }
  {
    title: 'Failure rate by backend and reason class (hourly)'
    query: 'customMetrics | where timestamp > ago(1d) and name in ("haste.jobs.failed", "haste.jobs.succeeded") | extend backend = tostring(customDimensions.backend), reasonClass = iff(name == "haste.jobs.failed", tostring(customDimensions.reason_class), "succeeded") | summarize jobs = sum(valueSum) by bin(timestamp, 1h), backend, reasonClass | render columnchart'
  }
  {
    title: 'Queue wait and provider wait by backend (mean and max seconds)'
    query: 'customMetrics | where timestamp > ago(1d) and name in ("haste.job.queue_wait", "haste.job.provider_wait", "haste.job.run_time", "haste.job.postprocess_time") | extend backend = tostring(customDimensions.backend) | summarize mean = sum(valueSum) / sum(valueCount), longest = max(valueMax) by name, backend'
  }
  {
    title: 'Poll calls per job, blob fallbacks, reconciler findings'
    query: 'customMetrics | where timestamp > ago(1d) and name in ("haste.job.polls", "haste.outputs.blob_fallback", "haste.reconcile.findings", "haste.reconcile.errors") | extend what = strcat(name, " ", tostring(customDimensions.finding), tostring(customDimensions.source)) | summarize total = sum(valueSum), perJob = sum(valueSum) / sum(valueCount) by what'
  }
  {
    title: 'Recent failures with their reasons'
    query: 'union requests, dependencies | where timestamp > ago(1d) and isnotempty(customDimensions["haste.reason"]) | project timestamp, job = tostring(customDimensions["haste.job_id"]), backend = tostring(customDimensions["haste.backend"]), reasonClass = tostring(customDimensions["haste.reason_class"]), reason = tostring(customDimensions["haste.reason"]), operation_Id | order by timestamp desc | take 100'
  }
]

var workbookItems = [
  for (question, i) in questions: {
    type: 3
    name: 'question-${i}'
    content: {
      version: 'KqlItem/1.0'
      title: question.title
      query: question.query
      size: 0
      queryType: 0
      resourceType: 'microsoft.insights/components'
    }
  }
]

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, name, 'haste-operations')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'haste-compute operations (${name})'
    category: 'workbook'
    sourceId: appInsightsId
    serializedData: string({ version: 'Notebook/1.0', items: workbookItems, isLocked: false })
  }
}

output actionGroupId string = actionGroup.id
output alertRuleNames array = [for (alert, i) in alerts: rules[i].name]
output workbookId string = workbook.id
