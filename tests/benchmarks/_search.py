"""Section 6: tool search (`toolSearch`) over a 1,000-tool catalog — ranking time and top-3 accuracy.

The catalog: 25 services, 4 kinds of thing each, 10 actions on each; each tool described the way MCP servers
describe theirs (what it does, what the thing is, parameters with descriptions). The queries are requests as a
user would type them, written by hand without copying the descriptions, each labelled with the one tool that
serves it. The figures are `ToolIndex.search` in this process (the ranking `search_tools` runs; the hop around it
is section 1's): its p50 over every query, and the share of queries whose labelled tool is among the first 3 hits.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from _report import Row, goal
from _settings import Settings
from mcp import types

from gateway.server.tool_index import ToolIndex

_SERVICES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "github": (
        "GitHub",
        [
            ("issue", "a bug report or feature request"),
            ("pull_request", "a proposed code change for review"),
            ("repository", "a git repo of code"),
            ("branch", "a line of commits"),
        ],
    ),
    "slack": (
        "Slack",
        [
            ("message", "a chat message posted to a channel"),
            ("channel", "a chat room for a team"),
            ("user", "a workspace member"),
            ("reaction", "an emoji reaction on a message"),
        ],
    ),
    "gmail": (
        "Gmail",
        [
            ("email", "a mail message in the mailbox"),
            ("draft", "an unsent email"),
            ("label", "a tag that sorts mail"),
            ("attachment", "a file attached to an email"),
        ],
    ),
    "calendar": (
        "Google Calendar",
        [
            ("event", "a meeting or appointment"),
            ("calendar", "a schedule of events"),
            ("reminder", "a notification before an event"),
            ("attendee", "a guest invited to an event"),
        ],
    ),
    "jira": (
        "Jira",
        [
            ("ticket", "a tracked task or bug"),
            ("sprint", "a time-boxed iteration"),
            ("board", "a kanban or scrum board"),
            ("worklog", "time logged against a ticket"),
        ],
    ),
    "stripe": (
        "Stripe",
        [
            ("payment", "a card charge"),
            ("refund", "money returned for a charge"),
            ("invoice", "a bill sent to a customer"),
            ("subscription", "a recurring plan billed periodically"),
        ],
    ),
    "shopify": (
        "Shopify",
        [
            ("product", "an item for sale in the store"),
            ("order", "a customer's purchase"),
            ("inventory", "stock levels of products"),
            ("discount", "a coupon code or price reduction"),
        ],
    ),
    "drive": (
        "Google Drive",
        [
            ("file", "a stored document or upload"),
            ("folder", "a directory of files"),
            ("permission", "who may view or edit a file"),
            ("revision", "an earlier version of a file"),
        ],
    ),
    "notion": (
        "Notion",
        [
            ("page", "a wiki or notes page"),
            ("database", "a table of structured records"),
            ("block", "a paragraph or item inside a page"),
            ("workspace_comment", "a comment left on a page"),
        ],
    ),
    "salesforce": (
        "Salesforce",
        [
            ("lead", "a prospective customer"),
            ("opportunity", "a potential deal in the sales pipeline"),
            ("account", "a company you sell to"),
            ("contact", "a person at an account"),
        ],
    ),
    "zendesk": (
        "Zendesk",
        [
            ("support_ticket", "a customer support request"),
            ("macro", "a canned response for agents"),
            ("satisfaction_rating", "a customer's CSAT score"),
            ("help_article", "a help center article"),
        ],
    ),
    "aws_s3": (
        "Amazon S3",
        [
            ("bucket", "a storage container for objects"),
            ("object", "a blob stored in a bucket"),
            ("lifecycle_rule", "a rule expiring or moving objects"),
            ("presigned_url", "a temporary download link"),
        ],
    ),
    "aws_ec2": (
        "Amazon EC2",
        [
            ("instance", "a virtual machine server"),
            ("security_group", "firewall rules for instances"),
            ("snapshot", "a disk backup"),
            ("key_pair", "an SSH login key"),
        ],
    ),
    "kubernetes": (
        "Kubernetes",
        [
            ("pod", "a running container group"),
            ("deployment", "a rollout of replicated pods"),
            ("service", "a network endpoint for pods"),
            ("namespace", "an isolated cluster area"),
        ],
    ),
    "postgres": (
        "PostgreSQL",
        [
            ("table", "a relational table"),
            ("query", "a SQL statement"),
            ("index", "a lookup structure speeding up queries"),
            ("role", "a database login and its privileges"),
        ],
    ),
    "twilio": (
        "Twilio",
        [
            ("sms", "a text message to a phone"),
            ("call", "a phone call"),
            ("phone_number", "a rented phone number"),
            ("recording", "an audio recording of a call"),
        ],
    ),
    "spotify": (
        "Spotify",
        [
            ("playlist", "a list of songs"),
            ("track", "a song"),
            ("album", "a collection of tracks by an artist"),
            ("podcast_episode", "an episode of a podcast"),
        ],
    ),
    "weather": (
        "OpenWeather",
        [
            ("forecast", "the weather expected in coming days"),
            ("current_conditions", "today's temperature, wind and rain"),
            ("alert", "a severe weather warning"),
            ("air_quality", "pollution and AQI levels"),
        ],
    ),
    "maps": (
        "Google Maps",
        [
            ("route", "driving or walking directions"),
            ("place", "a business or landmark"),
            ("geocode", "coordinates for an address"),
            ("distance_matrix", "travel times between many points"),
        ],
    ),
    "hubspot": (
        "HubSpot",
        [
            ("deal", "a sales deal in a pipeline"),
            ("marketing_email", "a newsletter campaign"),
            ("form", "a web signup form"),
            ("company", "an organisation record"),
        ],
    ),
    "figma": (
        "Figma",
        [
            ("design_file", "a design document"),
            ("frame", "an artboard in a design"),
            ("component", "a reusable UI element"),
            ("design_comment", "feedback pinned on a design"),
        ],
    ),
    "linear": (
        "Linear",
        [
            ("linear_issue", "an engineering task"),
            ("cycle", "a development cycle"),
            ("roadmap", "a plan of projects over time"),
            ("label_group", "a set of issue labels"),
        ],
    ),
    "quickbooks": (
        "QuickBooks",
        [
            ("expense", "money spent by the business"),
            ("bill", "a vendor bill to pay"),
            ("vendor", "a supplier"),
            ("tax_rate", "a sales tax rate"),
        ],
    ),
    "zoom": (
        "Zoom",
        [
            ("meeting", "a video conference"),
            ("webinar", "a large broadcast video session"),
            ("cloud_recording", "a recorded meeting video"),
            ("participant", "someone who joined a meeting"),
        ],
    ),
    "translate": (
        "Google Translate",
        [
            ("translation", "text rendered in another language"),
            ("glossary", "fixed term translations"),
            ("language", "a supported language"),
            ("document_translation", "a whole translated document"),
        ],
    ),
}
_ACTIONS: dict[str, str] = {
    "create": "Create a new {thing} in {service}. Returns the created {thing} with its id.",
    "list": "List {things} in {service}, newest first, with optional filters and paging.",
    "get": "Get the details of one {thing} in {service} by its id.",
    "update": "Update an existing {thing} in {service}: change any of its fields.",
    "delete": "Delete a {thing} from {service} permanently. This cannot be undone.",
    "search": "Search {things} in {service} by keywords in their text.",
    "archive": "Archive a {thing} in {service}, hiding it without deleting it.",
    "export": "Export {things} from {service} as a CSV file for download.",
    "count": "Count the {things} in {service} matching a filter (a number, not the records).",
    "share": "Share a {thing} of {service} with someone else by email address.",
}
QUERIES: list[tuple[str, str]] = [
    ("file a bug on GitHub: the login page crashes on Safari", "github_create_issue"),
    ("which pull requests are open in our GitHub repo", "github_list_pull_request"),
    ("post 'deploy finished' in the #ops Slack channel", "slack_create_message"),
    ("make a new Slack channel for the launch team", "slack_create_channel"),
    ("write a draft email to the landlord but don't send it yet", "gmail_create_draft"),
    ("find the email from Anna about the contract in my gmail", "gmail_search_email"),
    ("schedule a meeting with Bob on my Google Calendar for Tuesday 3pm", "calendar_create_event"),
    ("who is invited to the quarterly review meeting", "calendar_list_attendee"),
    ("how many jira tickets are still open", "jira_count_ticket"),
    ("refund the customer's last card charge", "stripe_create_refund"),
    ("send a bill to ACME for March on Stripe", "stripe_create_invoice"),
    ("cancel a customer's recurring plan", "stripe_delete_subscription"),
    ("add a new item for sale to the shop", "shopify_create_product"),
    ("how much stock do we have left of the blue mugs", "shopify_get_inventory"),
    ("make a 20% coupon code for black friday", "shopify_create_discount"),
    ("upload a document to Google Drive", "drive_create_file"),
    ("let Maria edit the budget spreadsheet on drive", "drive_share_file"),
    ("go back to an earlier version of the slides file", "drive_list_revision"),
    ("start a new notes page in Notion", "notion_create_page"),
    ("add a prospective customer we met at the fair to salesforce", "salesforce_create_lead"),
    ("show the deals in the salesforce sales pipeline", "salesforce_list_opportunity"),
    ("open a customer support request in Zendesk", "zendesk_create_support_ticket"),
    ("what CSAT scores did customers give last week", "zendesk_list_satisfaction_rating"),
    ("give me a temporary download link for the backup in S3", "aws_s3_create_presigned_url"),
    ("make a new S3 bucket for the logs", "aws_s3_create_bucket"),
    ("spin up a new virtual machine on EC2", "aws_ec2_create_instance"),
    ("back up the server's disk", "aws_ec2_create_snapshot"),
    ("which pods are running in the cluster", "kubernetes_list_pod"),
    ("roll out a new deployment of the api on kubernetes", "kubernetes_create_deployment"),
    ("run a SQL statement against the postgres database", "postgres_create_query"),
    ("add an index to speed up the orders table lookups in postgres", "postgres_create_index"),
    ("text my phone number that the build failed", "twilio_create_sms"),
    ("put together a playlist of songs for the party", "spotify_create_playlist"),
    ("will it rain this weekend", "weather_get_forecast"),
    ("is there a severe storm warning near me", "weather_list_alert"),
    ("how polluted is the air in Delhi today", "weather_get_air_quality"),
    ("driving directions from the office to the airport", "maps_get_route"),
    ("what are the coordinates of 10 Downing Street", "maps_get_geocode"),
    ("send our newsletter campaign to subscribers in HubSpot", "hubspot_create_marketing_email"),
    ("leave feedback on the homepage design in Figma", "figma_create_design_comment"),
    ("what's on the engineering roadmap in Linear", "linear_get_roadmap"),
    ("record a business expense of 40 dollars for lunch", "quickbooks_create_expense"),
    ("pay the supplier's bill in QuickBooks", "quickbooks_update_bill"),
    ("set up a video conference on Zoom for tomorrow", "zoom_create_meeting"),
    ("who joined yesterday's zoom call", "zoom_list_participant"),
    ("translate this paragraph into Spanish", "translate_create_translation"),
    ("which languages can Google Translate handle", "translate_list_language"),
    ("delete the old feature branch on github", "github_delete_branch"),
]
"""Requests as users type them, each with the tool that serves it (not copied from the descriptions)."""


def catalog() -> list[types.Tool]:
    """The 1,000 tools: `<service>_<action>_<thing>`, described like real MCP servers' tools."""
    tools: list[types.Tool] = []
    for key, (service, things) in _SERVICES.items():
        for thing, gloss in things:
            words = thing.replace("_", " ")
            for action, template in _ACTIONS.items():
                described = template.format(thing=words, things=f"{words}s", service=service)
                description = f"{described} A {words} is {gloss}."
                properties: dict[str, Any] = {"id": {"type": "string", "description": f"The {words}'s id."}}
                if action in ("create", "update"):
                    properties["fields"] = {"type": "object", "description": f"The {words}'s fields ({gloss})."}
                if action in ("list", "search", "count", "export"):
                    properties["query"] = {"type": "string", "description": f"Text or filter to match {words}s."}
                if action == "share":
                    properties["email"] = {"type": "string", "description": "Who to share it with."}
                tools.append(
                    types.Tool(
                        name=f"{key}_{action}_{thing}",
                        description=description,
                        input_schema={"type": "object", "properties": properties},
                    )
                )
    return tools


async def search_section(settings: Settings) -> list[Row]:
    """Search p50 over the 1,000-tool catalog and the top-3 share on the labelled queries."""
    section = "6 tool search (1,000 tools, ToolIndex.search in process)"
    tools = catalog()
    names = {tool.name for tool in tools}
    missing = [tool for _, tool in QUERIES if tool not in names]
    if missing:
        raise ValueError(f"Labelled queries name tools the catalog lacks: {missing}")
    started = time.perf_counter()
    index = ToolIndex(tools)
    build = (time.perf_counter() - started) * 1000
    timings: list[float] = []
    top3 = 0
    for _round in range(max(settings.rounds, 1)):
        top3 = 0
        for query, expected in QUERIES:
            started = time.perf_counter()
            hits = index.search(query, 3)
            timings.append((time.perf_counter() - started) * 1000)
            top3 += expected in [hit.name for hit in hits]
    p50 = statistics.median(timings)
    share = 100.0 * top3 / len(QUERIES)
    return [
        Row(section, "index build", "ms", build, "ms"),
        Row(section, "search", "p50 ms", p50, "ms", **goal("≤ 5 ms", p50 <= 5)),
        Row(section, f"{len(QUERIES)} labelled queries", "right tool in top 3, %", share, "%",
            **goal("≥ 90%", share >= 90)),
    ]  # fmt: skip
