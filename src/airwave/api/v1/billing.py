"""v1 billing/infoV2: the listener's plan, as clients ask for it to show or hide features.

Airwave bills nobody: the "product" is the listener's tier (spec §6.6), named the way clients
compare it."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, ResponseModel


class ActiveProduct(ResponseModel):
    product_tier: str = Field(
        description='"pandora_premium" when the tier plays on demand, "pandora_plus" when it '
        'has no ads, else "pandora_free"'
    )
    tier: str = Field(description="the listener's Airwave tier: free, plus or premium")


class BillingInfo(ResponseModel):
    active_product: ActiveProduct


@registry.endpoint("billing/infoV2", request=Empty, response=BillingInfo)
def billing_info(call: Call, req: Empty) -> BillingInfo:
    """The listener's plan: their tier, named as clients compare it to unlock features."""
    listener = call.require_listener()
    policy = call.services.settings.tier(listener.tier)
    product = (
        "pandora_premium"
        if policy.on_demand
        else "pandora_plus"
        if not policy.ads
        else "pandora_free"
    )
    return BillingInfo(active_product=ActiveProduct(product_tier=product, tier=listener.tier))
