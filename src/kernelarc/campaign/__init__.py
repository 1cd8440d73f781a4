"""The campaign: agents in parallel, one guard, a store; plateaus, budget, stop, resume."""

from kernelarc.campaign.executor import ExecutorSpec
from kernelarc.campaign.loop import AgentSlot, Campaign, Progress
from kernelarc.campaign.options import CampaignOptions, StopReason
from kernelarc.campaign.run import CampaignResult, resume, start

__all__ = ["AgentSlot", "Campaign", "CampaignOptions", "CampaignResult", "ExecutorSpec", "Progress", "StopReason", "resume",
           "start"]
