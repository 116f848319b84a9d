// Azure Batch: the account and one pool per workload.
//
// - Entra-only account (allowedAuthenticationModes AAD): no shared keys anywhere.
// - Pools autoscale from zero: the formula below sizes a pool to its pending tasks and
//   returns to zero nodes when idle, so an unused pool costs nothing.
// - lowPriority=true puts the nodes on low-priority (spot) capacity: cheaper, preemptible.
//   A preempted task is requeued by Batch; the pipeline reads results from blob storage, so
//   a node that is gone does not lose finished outputs.
// - nodeDeallocation decides what happens to a running task when autoscale removes its node
//   ($NodeDeallocationOption): taskcompletion (default: wait for running tasks to finish),
//   requeue (stop the task and run it again elsewhere), terminate (stop it; the job fails
//   with a readable cause). retaineddata is not offered: it is deprecated and gone from the
//   Batch API 2026-08-01, so a deployment choosing it would break on the next API version.
// - Containers run from the registry, pulled with the pool's user-assigned identity (AcrPull
//   in roles.bicep); the same identity uploads outputs and reads inputs.

param location string
param tags object
@minLength(3)
@maxLength(24)
param name string
@description('One entry per workload: { name, image, vmSize }.')
param workloads array
param imageTag string
param registryLoginServer string
param poolIdentityId string
@minValue(1)
param maxNodes int
param lowPriority bool
@allowed([
  'requeue'
  'terminate'
  'taskcompletion'
])
param nodeDeallocation string

// Pending tasks over the last 5 minutes decide the target; no pending tasks means zero nodes.
var formulaTemplate = '''
$samples = $PendingTasks.GetSamplePercent(TimeInterval_Minute * 5);
$pending = $samples < 70 ? max(0, $PendingTasks.GetSample(1)) : max($PendingTasks.GetSample(1), avg($PendingTasks.GetSample(TimeInterval_Minute * 5)));
$target = min(__MAX_NODES__, $pending);
$TargetDedicatedNodes = __LOW_PRIORITY__ ? 0 : $target;
$TargetLowPriorityNodes = __LOW_PRIORITY__ ? $target : 0;
$NodeDeallocationOption = __DEALLOCATION__;
'''
var formula = replace(replace(replace(formulaTemplate, '__MAX_NODES__', string(maxNodes)), '__LOW_PRIORITY__', lowPriority ? '1' : '0'), '__DEALLOCATION__', nodeDeallocation)

resource account 'Microsoft.Batch/batchAccounts@2025-06-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    poolAllocationMode: 'BatchService'
    allowedAuthenticationModes: [
      'AAD'
    ]
    publicNetworkAccess: 'Enabled'
  }
}

resource pools 'Microsoft.Batch/batchAccounts/pools@2025-06-01' = [
  for workload in workloads: {
    parent: account
    name: 'haste-${workload.name}'
    identity: {
      type: 'UserAssigned'
      userAssignedIdentities: {
        '${poolIdentityId}': {}
      }
    }
    properties: {
      vmSize: workload.vmSize
      taskSlotsPerNode: 1
      interNodeCommunication: 'Disabled'
      targetNodeCommunicationMode: 'Simplified'
      deploymentConfiguration: {
        virtualMachineConfiguration: {
          // Ubuntu 24.04 with a container runtime, maintained for Batch container workloads; the
          // Ubuntu 22.04 image and its node agent are retired on 2027-06-30 (Azure/Batch#200).
          imageReference: {
            publisher: 'microsoft-dsvm'
            offer: 'ubuntu-hpc'
            sku: '2404'
            version: 'latest'
          }
          nodeAgentSkuId: 'batch.node.ubuntu 24.04'
          containerConfiguration: {
            type: 'DockerCompatible'
            // Images are pulled when a task starts, so a pool can exist before its image does.
            containerRegistries: [
              {
                registryServer: registryLoginServer
                identityReference: {
                  resourceId: poolIdentityId
                }
              }
            ]
          }
        }
      }
      scaleSettings: {
        autoScale: {
          formula: formula
          evaluationInterval: 'PT5M'
        }
      }
    }
  }
]

output name string = account.name
output accountUrl string = 'https://${account.properties.accountEndpoint}'
// BATCH_POOLS and BATCH_IMAGES in the form hastegeo reads: workload=value,workload=value.
output poolsSetting string = join(map(workloads, w => '${w.name}=haste-${w.name}'), ',')
output imagesSetting string = join(map(workloads, w => '${w.name}=${registryLoginServer}/${w.image}:${imageTag}'), ',')
