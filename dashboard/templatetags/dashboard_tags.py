"""Template helpers: mounting a plotly figure, the number formats of ``dashboard.formatting``, and
the long tables of ``dashboard.tables``."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from dashboard import formatting, tables

register = template.Library()

# Inside <script>, "</script>" or "<!--" in an operator name would end the element early.
_SCRIPT_ESCAPES = str.maketrans({"<": "\\u003C", ">": "\\u003E", "&": "\\u0026"})


@register.simple_tag
def figure(fig_json: str | None, element_id: str, css_class: str = "") -> SafeString:
    """A chart placeholder holding the figure JSON; dashboard.js draws it with plotly.js."""
    if not fig_json:
        return mark_safe("")
    return format_html(
        '<div class="chart {}" id="{}" data-figure><script type="application/json">{}</script></div>',
        css_class,
        element_id,
        mark_safe(fig_json.translate(_SCRIPT_ESCAPES)),  # noqa: S308 - escaped for <script> above
    )


@register.filter
def device_badge(device: object) -> SafeString:
    """A device's state badge: online, busy, offline, or dataset (``formatting.device_state``)."""
    key, label = formatting.device_state(device)
    return format_html('<span class="badge device-{}" data-device-state="{}">{}</span>', key, key, label)


register.filter("ms", formatting.ms)
register.filter("si", formatting.si)
register.filter("filesize", formatting.size)
register.filter("percent", formatting.percent)
register.filter("ratio", formatting.ratio)
register.filter("ago", formatting.ago)
register.filter("settings_items", formatting.settings_items)
register.filter("celsius", formatting.celsius)
register.filter("flag_name", formatting.flag_name)
register.filter("reason", formatting.reason)


register.simple_tag(tables.operator_rows, name="operator_rows")
register.simple_tag(tables.model_operator_rows, name="model_operator_rows")
register.simple_tag(tables.delta_rows, name="delta_rows")
register.simple_tag(tables.fleet_rows, name="fleet_rows")
