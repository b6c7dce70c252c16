"""Admin pages for teams, memberships and API tokens."""

from __future__ import annotations

from django.contrib import admin

from server.accounts.models import ApiToken, Membership, Team


class MembershipInline(admin.TabularInline):
    """Members shown on their team's page."""

    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    """Teams."""

    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    """Who is in which team."""

    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]
    autocomplete_fields = ["user", "team"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """API tokens (only their prefix is shown; the key itself is never stored)."""

    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at", "created_at"]
    search_fields = ["prefix", "user__username", "name"]
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
