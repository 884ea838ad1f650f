"""The names benchmark's workspaces: notes about things, and logs that mention them.

People type a name or a few words into a memory search: the project, the person,
the topic. What they want first is the note *about* it (``memory/projects/atlas.md``,
``memory/people/dana-okafor.md``), not the daily log that mentions it in passing
(``- Mentioned Atlas briefly.``). This module builds workspaces in the OpenClaw
layout that hold both:

* generated ones (:func:`generated`): a seed picks projects, people and topics from
  the pools below; each gets a note (title, body that names it rarely), MEMORY.md
  lists them all in one line each, and two months of daily logs mention them in
  passing, report real progress on them, and hold errands that mention nothing;
* hand-written ones under ``tests/bench/data/names/<name>/`` (files as they are)
  with their queries in ``tests/bench/data/names/queries.json``;
* the demo workspace of ``memdeck demo`` (``engine.cli.demo``), dated from a fixed day.

Each :class:`Query` is a form people type — lower case, capitalised, a partial name
(the first name, the surname), a plural, a 1–3-word topic — with the note(s) a
person would want first. Everything is deterministic: the same seed gives the same
files, so the index and its embeddings are built once (tests/bench/.cache).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data" / "names"
TODAY = dt.date(2026, 11, 27)
#: generated workspaces (seeds 1..N)
GENERATED = 6


@dataclass(frozen=True)
class Query:
    text: str
    wanted: tuple[str, ...]  # workspace-relative paths; any chunk of one is a hit
    form: str  # "name", "lower", "partial", "plural", "topic"


@dataclass
class NamesWorkspace:
    name: str
    files: dict[str, str]
    queries: list[Query]
    today: dt.date = TODAY
    kind: str = "generated"  # or "hand-written", "demo"


# -- the pools ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Project:
    name: str
    subtitle: str
    goal: str
    facts: tuple[str, ...]
    updates: tuple[str, ...]  # a day's real progress (the daily logs)
    topics: tuple[str, ...]  # 1–3-word queries whose answer is this note
    plural: str | None = None  # a plural form people type


PROJECTS = (
    Project(
        "Atlas",
        "billing migration",
        "Move the billing service from Postgres 13 to 16 without losing an invoice.",
        (
            "Cut-over is planned right after the March freeze.",
            "Rehearse the switch on staging twice before production.",
            "Pause the invoice cron job before the cut-over and resume it after.",
            "Rollback: keep the old primary read-only for 48 hours and repoint PgBouncer.",
            "pg_upgrade with --link on the replica, then promote it.",
        ),
        (
            "Staging rehearsal: replication lag peaked at 3.2 s during the switch.",
            "pg_upgrade dry run took 41 minutes on the staging snapshot.",
            "Second rehearsal went clean once the invoice cron was paused.",
            "Wrote the one-page rollback plan and shared it.",
        ),
        ("billing migration", "postgres upgrade"),
        "billing migrations",
    ),
    Project(
        "Lighthouse",
        "support ticket search",
        "Let support agents find similar past tickets by meaning, not only by keyword.",
        (
            "BM25 alone misses paraphrases such as card declined versus payment refused.",
            "Hybrid ranking with a small embedding model beat the keyword baseline.",
            "Evaluation set: 200 labelled tickets, target hit@5 of 0.8.",
            "Runs next to the helpdesk database; no ticket leaves the network.",
            "The agents want the matching sentence highlighted in each result.",
        ),
        (
            "Labelled another 50 tickets for the evaluation set.",
            "Min-max normalisation beat the raw weighted sum, hit@5 0.81 against 0.74.",
            "Demoed the prototype to the support leads; they asked for highlighting.",
            "Index of 1.2 million tickets built in 40 minutes.",
        ),
        ("ticket search", "support search"),
        "support tickets",
    ),
    Project(
        "Heron",
        "mobile app redesign",
        "Redesign the mobile app's navigation around three tabs instead of a drawer.",
        (
            "The drawer hides the booking history, which users cannot find.",
            "Usability tests with eight customers in two rounds.",
            "Design tokens come from the shared design system.",
            "Release behind a feature flag to ten percent of Android users first.",
            "Accessibility review is required before the flag goes to everyone.",
        ),
        (
            "Usability round one: six of eight testers found the history tab at once.",
            "Fixed the contrast of the tab labels after the accessibility review.",
            "Flag at ten percent on Android; crash rate unchanged.",
            "Icons for the three tabs approved by the brand team.",
        ),
        ("app redesign", "mobile navigation"),
        "app redesigns",
    ),
    Project(
        "Kestrel",
        "event pipeline",
        "Replace the nightly batch export with a streaming pipeline of order events.",
        (
            "Events go through Kafka with one topic per aggregate.",
            "Consumers must be idempotent; every event carries a sequence number.",
            "The warehouse loads the events every five minutes instead of nightly.",
            "Schema changes go through the schema registry with backward compatibility.",
            "Dead letters land in a separate topic and page nobody before 9:00.",
        ),
        (
            "Backfilled three months of order events into the new topics.",
            "Found duplicate events after a consumer restart; added the sequence check.",
            "Warehouse lag down from 24 hours to six minutes.",
            "Registry rejected a breaking schema change, as it should.",
        ),
        ("event pipeline", "order events"),
        "event pipelines",
    ),
    Project(
        "Juniper",
        "customer onboarding",
        "Cut the time from sign-up to first invoice sent from two weeks to two days.",
        (
            "Most new customers stall at the bank verification step.",
            "A checklist inside the product replaces the welcome e-mail series.",
            "Sales hands over every account with a short call summary.",
            "Success metric: first invoice sent within 48 hours of sign-up.",
            "Support gets a view of where each new account is stuck.",
        ),
        (
            "Median time to first invoice is now four days, down from eleven.",
            "Bank verification moved to the end of the checklist.",
            "Interviewed five customers who dropped out during sign-up.",
            "The in-product checklist shipped to all new accounts.",
        ),
        ("customer onboarding", "onboarding checklist"),
        "onboarding checklists",
    ),
    Project(
        "Tundra",
        "cold storage archive",
        "Move attachments older than a year to cheap cold storage without breaking links.",
        (
            "Attachments older than twelve months are 80 percent of the bucket.",
            "Restores from cold storage take up to twelve hours.",
            "Links keep working: a stub redirects to a restore request.",
            "Legal hold flags keep an attachment in the hot tier.",
            "Expected saving is about 14,000 euros a year.",
        ),
        (
            "First batch of 2 TB moved to the archive tier.",
            "A restore request took nine hours end to end.",
            "Legal confirmed the hold flags cover every open case.",
            "Storage bill dropped by a third this month.",
        ),
        ("cold storage", "attachment archive"),
        "attachment archives",
    ),
    Project(
        "Beacon",
        "public status page",
        "Publish a status page that updates itself from the incident tooling.",
        (
            "Components: API, dashboard, payments, e-mail delivery.",
            "An incident at severity two or above posts to the page automatically.",
            "Uptime history covers the last 90 days.",
            "Subscribers can follow a single component by e-mail or RSS.",
            "The page is hosted outside our own cloud account.",
        ),
        (
            "The page posted the payments incident within a minute.",
            "Added RSS feeds per component.",
            "Moved the hosting to a separate provider.",
            "Reviewed the wording of the incident templates with support.",
        ),
        ("status page", "incident updates"),
        "status pages",
    ),
    Project(
        "Quartz",
        "reporting dashboard",
        "Give finance a self-serve dashboard for monthly revenue and churn.",
        (
            "Numbers come from the warehouse, refreshed every morning at 6:00.",
            "Revenue is recognised on invoice date, churn on cancellation date.",
            "Finance checks every metric against the ledger once a quarter.",
            "Filters: region, plan, sales channel.",
            "Exports to spreadsheet keep the filters applied.",
        ),
        (
            "Churn numbers matched the ledger to the cent after fixing refunds.",
            "Added the sales channel filter finance asked for.",
            "The dashboard's morning refresh failed; the warehouse job had timed out.",
            "Finance used it for the monthly close for the first time.",
        ),
        ("revenue dashboard", "churn report"),
        "revenue dashboards",
    ),
    Project(
        "Mosaic",
        "design system",
        "One library of components and tokens for the web app, the mobile app and e-mail.",
        (
            "Tokens for colour, spacing and type live in one JSON file.",
            "Components are documented with live examples.",
            "Every component passes an automated contrast check.",
            "Breaking changes need a migration note and a codemod.",
            "Two designers and one engineer maintain it part-time.",
        ),
        (
            "Released version 3 with the new spacing scale.",
            "The codemod for the button rename ran over 400 files.",
            "Dark mode tokens reviewed with the brand team.",
            "Documentation site moved next to the component source.",
        ),
        ("design system", "component library"),
        "design tokens",
    ),
    Project(
        "Falcon",
        "CI speed-up",
        "Bring the main branch's CI from 38 minutes to under 10.",
        (
            "Test sharding across eight runners.",
            "Docker layers are cached between runs.",
            "Flaky tests are quarantined automatically after three failures.",
            "The slowest suite is the end-to-end browser tests.",
            "Target: p90 pipeline time under ten minutes.",
        ),
        (
            "Sharding brought the pipeline down to 17 minutes.",
            "Quarantined eleven flaky tests in one week.",
            "Layer caching saves four minutes per run.",
            "p90 pipeline time is now nine minutes.",
        ),
        ("ci pipeline", "build times"),
        "flaky tests",
    ),
    Project(
        "Nimbus",
        "cloud cost review",
        "Cut the monthly cloud bill by a quarter without touching reliability.",
        (
            "Idle staging clusters cost more than production at night.",
            "Reserved instances for the steady database load.",
            "Every team gets a monthly cost report by tag.",
            "Untagged resources are flagged after seven days.",
            "Savings are tracked in the finance sheet.",
        ),
        (
            "Staging clusters now scale to zero at night.",
            "Bought reserved instances for the database tier.",
            "The first cost report by tag went to the team leads.",
            "Monthly bill down 19 percent so far.",
        ),
        ("cloud costs", "cost report"),
        "cloud bills",
    ),
    Project(
        "Pebble",
        "thermostat firmware",
        "Ship the thermostat firmware that learns a household's schedule.",
        (
            "The schedule is learned from two weeks of manual changes.",
            "Updates are signed and installed over the air at night.",
            "Battery life must stay above one year.",
            "A factory reset brings back the default schedule.",
            "Beta with 300 households in two climates.",
        ),
        (
            "Beta households changed the setpoint 40 percent less often.",
            "Fixed a battery drain caused by the radio polling too often.",
            "Over-the-air update rolled out to the whole beta.",
            "Certification lab booked for the radio tests.",
        ),
        ("thermostat firmware", "firmware update"),
        "firmware updates",
    ),
    Project(
        "Harbor",
        "container registry",
        "Run our own container registry with image scanning and retention rules.",
        (
            "Images are scanned for known vulnerabilities on push.",
            "Untagged images are deleted after 30 days.",
            "Pulls go through a cache in each region.",
            "Only the CI service account may push to release repositories.",
            "The registry's storage is replicated to a second region.",
        ),
        (
            "Scanning found two critical vulnerabilities in the base image.",
            "Retention rules freed 3 TB of storage.",
            "Regional pull cache cut image pulls from 40 s to 6 s.",
            "Push permissions locked down to the CI account.",
        ),
        ("container registry", "image scanning"),
        "container images",
    ),
    Project(
        "Orchard",
        "internal wiki cleanup",
        "Archive stale pages and give every remaining wiki page an owner.",
        (
            "About 2,000 pages have not been edited in two years.",
            "Every page shows its owner and last review date.",
            "Pages without an owner are archived after a warning.",
            "Search on the wiki ignores archived pages.",
            "Each team reviews its pages once a quarter.",
        ),
        (
            "Archived 1,400 stale pages after the warning period.",
            "Owners assigned to every page of the engineering space.",
            "Search results got visibly better once archived pages dropped out.",
            "First quarterly review done by the platform team.",
        ),
        ("wiki cleanup", "stale pages"),
        "wiki pages",
    ),
)


@dataclass(frozen=True)
class Person:
    first: str
    last: str
    role: str
    facts: tuple[str, ...]


PEOPLE = (
    Person(
        "Dana",
        "Okafor",
        "product engineer",
        ("Prefers short answers with the code first.", "Lives in Lisbon."),
    ),
    Person(
        "Ravi",
        "Menon",
        "engineering manager",
        ("Runs the Tuesday planning meeting.", "Wants the weekly summary by Friday noon."),
    ),
    Person("Inês", "Carvalho", "data analyst", ("Allergic to penicillin.", "Plays the cello.")),
    Person(
        "Tomasz",
        "Nowak",
        "site reliability engineer",
        ("On call every fourth week.", "Moved from Kraków to Berlin last spring."),
    ),
    Person(
        "Priya",
        "Raman",
        "designer",
        ("Sketches on paper before opening any tool.", "Two kids, both in primary school."),
    ),
    Person(
        "Kenji",
        "Watanabe",
        "security lead",
        ("Reviews every change to authentication.", "Runs ultramarathons."),
    ),
    Person(
        "Amara",
        "Diallo",
        "head of support",
        ("Speaks French, Wolof and English.", "Keeps a list of the top ten customer pains."),
    ),
    Person(
        "Lucas",
        "Moreau",
        "sales director",
        ("Travels most weeks.", "Prefers a phone call to a long e-mail."),
    ),
    Person(
        "Sofia",
        "Brandt",
        "finance controller",
        ("Closes the books on the third working day.", "Vegetarian."),
    ),
    Person(
        "Mateo",
        "Silva",
        "backend engineer",
        ("Joined in September from a bank.", "Maintains the payments client library."),
    ),
    Person(
        "Hannah",
        "Cole",
        "recruiter",
        ("Hiring for two backend roles this quarter.", "Works from Dublin."),
    ),
    Person(
        "Yusuf",
        "Demir",
        "mobile engineer",
        ("Owns the Android release train.", "Learning to sail."),
    ),
    Person(
        "Freya",
        "Lind",
        "product manager",
        ("Writes one-page specs.", "Birthday on 3 April."),
    ),
    Person(
        "Omar",
        "Haddad",
        "data engineer",
        ("Keeps the warehouse jobs running.", "Coffee: double espresso, no sugar."),
    ),
    Person(
        "Chloe",
        "Martin",
        "legal counsel",
        ("Reviews every customer contract over 50k.", "Part-time on Fridays."),
    ),
    Person(
        "Nikolai",
        "Petrov",
        "CTO",
        ("Holds office hours on Thursday afternoons.", "Dislikes slide decks."),
    ),
)

#: what a person note says about working with them (picked per person)
PERSON_WORK = (
    "Best reached on chat in the morning.",
    "Likes decisions written down before the meeting.",
    "Asks for numbers before opinions.",
    "Prefers to review pull requests in the afternoon.",
    "Shares a one-to-one with me every other Monday.",
    "Takes notes in every meeting and shares them the same day.",
    "Wants to be told about risks early, even vague ones.",
)


@dataclass(frozen=True)
class Topic:
    slug: str
    title: str
    facts: tuple[str, ...]
    updates: tuple[str, ...]
    queries: tuple[str, ...]
    plural: str | None = None


TOPICS = (
    Topic(
        "sourdough",
        "Sourdough",
        (
            "Starter: equal parts flour and water, fed every evening.",
            "Dough at 75 percent hydration, 2 percent salt.",
            "Bulk fermentation about five hours at 24 degrees.",
            "Bake covered at 250 degrees for 20 minutes, then 25 uncovered.",
        ),
        ("Fed the starter; it doubled in six hours.", "Loaf came out flat; proofed too long."),
        ("sourdough", "sourdough starter", "bread baking"),
        "sourdough loaves",
    ),
    Topic(
        "bouldering",
        "Bouldering",
        (
            "Gym sessions on Monday and Thursday evenings.",
            "Working on the grade 6A problems in the cave.",
            "Warm up with ten minutes of easy traverses.",
            "Rest two days after a hard session on crimps.",
        ),
        ("Sent the blue 6A in the cave.", "Sore fingers; skipped the crimpy problems."),
        ("bouldering", "climbing gym"),
        "boulder problems",
    ),
    Topic(
        "tax-return",
        "Tax return",
        (
            "Deadline is 30 June; the accountant wants the papers by 15 May.",
            "Keep receipts for the home office and the train pass.",
            "The rental income goes in its own annex.",
            "Last year's refund arrived in September.",
        ),
        ("Sent the receipts folder to the accountant.", "Found the missing rental statement."),
        ("tax return", "tax deadline"),
        "tax returns",
    ),
    Topic(
        "home-network",
        "Home network",
        (
            "Router in the hallway, mesh node in the study.",
            "Guest network separated from the main one.",
            "The NAS backs up the laptops every night at 2:00.",
            "Router admin password is in the password manager.",
        ),
        ("Moved the mesh node; the study has full signal now.", "NAS backup failed; disk full."),
        ("home network", "wifi setup"),
        "network settings",
    ),
    Topic(
        "garden",
        "Garden beds",
        (
            "Three raised beds: herbs, tomatoes, beans.",
            "Water every second evening in summer.",
            "Compost goes on in March.",
            "Rotate the tomatoes and beans every year.",
        ),
        ("Planted the tomato seedlings.", "Slugs ate half the lettuce."),
        ("garden beds", "raised beds"),
        "vegetable beds",
    ),
    Topic(
        "marathon",
        "Marathon training",
        (
            "Race on 12 April; target time 3 hours 45.",
            "Four runs a week, one long run on Sunday.",
            "Long run builds to 32 kilometres in week fourteen.",
            "Easy runs at conversation pace.",
        ),
        ("Long run of 24 km at easy pace.", "Skipped intervals; tight calf."),
        ("marathon training", "long runs"),
        "marathons",
    ),
    Topic(
        "espresso",
        "Espresso",
        (
            "18 grams in, 36 grams out, 28 seconds.",
            "Grinder setting 12 for the Ethiopian beans.",
            "Descale the machine every two months.",
            "Beans from the roaster on Rua da Rosa.",
        ),
        ("Dialled in the new beans at setting 11.", "Descaled the machine."),
        ("espresso", "coffee grinder"),
        "espresso shots",
    ),
    Topic(
        "japanese",
        "Japanese lessons",
        (
            "Lessons with a tutor on Wednesday at 19:00.",
            "Working through the second textbook, chapter 9.",
            "Flashcards every morning, 20 new words a day.",
            "The trip to Osaka in May is the deadline to order food unaided.",
        ),
        ("Tutor lesson on the te-form.", "Flashcard streak at 60 days."),
        ("japanese lessons", "japanese tutor"),
        "kanji flashcards",
    ),
    Topic(
        "bike",
        "Bike maintenance",
        (
            "Chain cleaned and oiled every 300 kilometres.",
            "Tyres at 5 bar front, 5.5 rear.",
            "Brake pads replaced in March.",
            "The shop on the corner does the yearly service.",
        ),
        ("Cleaned and oiled the chain.", "Rear tyre puncture on the way home."),
        ("bike maintenance", "bike service"),
        "bike tyres",
    ),
    Topic(
        "houseplants",
        "Houseplants",
        (
            "Water the monstera once a week, the cactus once a month.",
            "Repot in spring with fresh soil.",
            "The fern wants the bathroom's humidity.",
            "Fertiliser every second watering from April to September.",
        ),
        ("Repotted the monstera.", "Fern dropping leaves; moved it to the bathroom."),
        ("houseplants", "plant watering"),
        None,
    ),
    Topic(
        "vinyl",
        "Vinyl records",
        (
            "Around 300 records, sorted by label.",
            "Clean each record before the first play.",
            "Replace the stylus every 1,000 hours.",
            "Wishlist lives in the record shop's app.",
        ),
        ("Bought two jazz reissues.", "Cleaned the new records."),
        ("vinyl records", "record collection"),
        None,
    ),
    Topic(
        "meal-prep",
        "Meal prep",
        (
            "Cook on Sunday for Monday to Wednesday.",
            "Base: rice or lentils, one roasted vegetable tray, one sauce.",
            "Glass boxes, labelled with the day.",
            "Thursday and Friday are cooked fresh.",
        ),
        ("Prepped lentil bowls for three days.", "Skipped prep; ordered food twice."),
        ("meal prep", "weekly cooking"),
        "lunch boxes",
    ),
)

PASSING_PROJECT = (
    "- Mentioned {p} briefly.",
    "- {p} came up at standup; nothing new.",
    "- Skimmed the {p} channel.",
    "- Reminder: the {p} sync moved to Thursday.",
    "- Forwarded the {p} notes to {person}.",
    "- {p} dashboard looked normal.",
    "- Someone asked whether {p} is on track; pointed them to the plan.",
)
PASSING_PERSON = (
    "- Mentioned {person} briefly.",
    "- Lunch with {person}.",
    "- Quick chat with {person} in the kitchen.",
    "- {person} was out today.",
    "- Coffee with {person}, mostly small talk.",
    "- Asked {person} about the offsite dates.",
    "- {person} says hi to everyone.",
)
PASSING_TOPIC = (
    "- Mentioned {t} briefly.",
    "- Read an article about {t}.",
    "- No time for {t} this week.",
)
ERRANDS = (
    "- Bought oat milk and coffee beans.",
    "- Dentist appointment moved to next Thursday.",
    "- Booked the train for the weekend.",
    "- Paid the electricity bill.",
    "- Picked up the parcel from the post office.",
    "- Recycling out tonight.",
    "- Called the landlord about the boiler.",
    "- Renewed the library books online.",
    "- Haircut at 17:30.",
    "- Ordered a birthday present for my sister.",
    "- Cleaned the inbox down to zero.",
    "- Walked to work; 25 minutes.",
)


# -- building a workspace ----------------------------------------------------------------
def slug(text: str) -> str:
    return "-".join("".join(ch for ch in w.lower() if ch.isalnum()) for w in text.split())


def _project_note(p: Project, owner: Person, helper: Person) -> str:
    facts = "\n".join(f"- {f}" for f in p.facts[:3])
    rest = "\n".join(f"- {f}" for f in p.facts[3:])
    return (
        f"# {p.name} — {p.subtitle}\n\n"
        f"{p.goal}\n\n"
        f"Owner: {owner.first} {owner.last}. Also working on it: {helper.first}.\n\n"
        f"## Plan\n{facts}\n\n"
        f"## Notes\n{rest}\n"
    )


def _person_note(person: Person, works_on: Project, extra: str) -> str:
    facts = "\n".join(f"- {f}" for f in person.facts)
    return (
        f"# {person.first} {person.last}\n\n"
        f"{person.role.capitalize()}; works with me on {works_on.name}.\n\n"
        f"## Working together\n- {extra}\n\n"
        f"## Personal\n{facts}\n"
    )


def _topic_note(t: Topic) -> str:
    facts = "\n".join(f"- {f}" for f in t.facts)
    return f"# {t.title}\n\n{facts}\n"


def _memory_md(projects: list[Project], people: list[Person], topics: list[Topic]) -> str:
    lines = [
        "# MEMORY",
        "",
        "Long-term facts for the assistant. Daily notes live in memory/YYYY-MM-DD.md.",
        "",
        "## Projects",
    ]
    lines += [f"- **{p.name}**: {p.subtitle}; {p.goal[0].lower()}{p.goal[1:]}" for p in projects]
    lines += ["", "## People"]
    lines += [f"- {x.first} {x.last} — {x.role}." for x in people]
    lines += ["", "## Interests"]
    lines += [f"- {t.title}." for t in topics]
    return "\n".join(lines) + "\n"


def generated(seed: int) -> NamesWorkspace:
    """Workspace ``gen-<seed>``: 5 projects, 5 people, 4 topics and 60 days of logs."""
    rng = random.Random(seed)
    projects = rng.sample(PROJECTS, 5)
    people = rng.sample(PEOPLE, 5)
    topics = rng.sample(TOPICS, 4)
    files: dict[str, str] = {}
    queries: list[Query] = []
    person_paths: dict[str, str] = {}
    for i, person in enumerate(people):
        # half the people notes are named by the first name only, as people do
        stem = slug(person.first) if i % 2 else slug(f"{person.first} {person.last}")
        person_paths[person.first] = f"memory/people/{stem}.md"
    for p in projects:
        owner, helper = rng.sample(people, 2)
        path = f"memory/projects/{slug(p.name)}.md"
        files[path] = _project_note(p, owner, helper)
        queries += [Query(p.name.lower(), (path,), "lower"), Query(p.name, (path,), "name")]
        queries += [Query(t, (path,), "topic") for t in p.topics]
        if p.plural:
            queries.append(Query(p.plural, (path,), "plural"))
    for person in people:
        path = person_paths[person.first]
        files[path] = _person_note(person, rng.choice(projects), rng.choice(PERSON_WORK))
        queries += [
            Query(person.first.lower(), (path,), "lower"),
            Query(f"{person.first} {person.last}", (path,), "name"),
            Query(person.last.lower(), (path,), "partial"),
        ]
    for t in topics:
        path = f"memory/topics/{t.slug}.md"
        files[path] = _topic_note(t)
        queries += [Query(q, (path,), "lower" if q == t.slug else "topic") for q in t.queries]
        if t.plural:
            queries.append(Query(t.plural, (path,), "plural"))
    files["MEMORY.md"] = _memory_md(projects, people, topics)
    names = [f"{x.first}" for x in people]
    for day in range(60, 0, -1):
        date = TODAY - dt.timedelta(days=day)
        if date.weekday() >= 5 and rng.random() < 0.6:
            continue
        entries: list[str] = []
        for _ in range(rng.randint(2, 4)):
            who = rng.choice(names)
            kind = rng.random()
            if kind < 0.3:
                p = rng.choice(projects)
                tmpl = rng.choice(PASSING_PROJECT)
                entries.append(tmpl.format(p=p.name, person=who))
            elif kind < 0.55:
                entries.append(rng.choice(PASSING_PERSON).format(person=who))
            elif kind < 0.65:
                t = rng.choice(topics)
                entries.append(rng.choice(PASSING_TOPIC).format(t=t.title.lower()))
            elif kind < 0.8:
                p = rng.choice(projects)
                entries.append(f"- {p.name}: {rng.choice(p.updates)}")
            elif kind < 0.85:
                t = rng.choice(topics)
                entries.append(f"- {rng.choice(t.updates)}")
            else:
                entries.append(rng.choice(ERRANDS))
        hour = rng.randint(8, 17)
        body = "\n".join(entries)
        text = f"# {date.isoformat()}\n\n## {hour:02d}:00\n{body}\n"
        if rng.random() < 0.25:  # a section of the day named after a project
            p = rng.choice(projects)
            notes = "\n".join(f"- {u}" for u in rng.sample(p.updates, 2))
            text += f"\n## {p.name}\n{notes}\n"
        files[f"memory/{date.isoformat()}.md"] = text
    return NamesWorkspace(f"gen-{seed}", files, queries)


def demo_workspace() -> NamesWorkspace:
    """``memdeck demo``'s workspace, dated from :data:`TODAY`, with its names."""
    from engine.cli.demo import DAILY, MEMORY_MD, NOTES

    files = {"MEMORY.md": MEMORY_MD, **NOTES}
    for days_ago, body in DAILY:
        day = TODAY - dt.timedelta(days=days_ago)
        files[f"memory/{day.isoformat()}.md"] = f"# {day.isoformat()}\n\n{body}"
    atlas, nxt = "memory/projects/atlas.md", "memory/gtd/NEXT.md"
    queries = [
        Query("Atlas", (atlas,), "name"),
        Query("atlas", (atlas,), "lower"),
        Query("atlas rollback", (atlas,), "topic"),
        Query("cut-over checklist", (atlas,), "topic"),
        Query("billing migration", (atlas,), "topic"),
        Query("next actions", (nxt,), "topic"),
    ]
    return NamesWorkspace("demo", files, queries, kind="demo")


def hand_written() -> list[NamesWorkspace]:
    """The workspaces under ``tests/bench/data/names/`` with their queries."""
    spec = json.loads((DATA_DIR / "queries.json").read_text(encoding="utf-8"))
    out = []
    for name, entry in spec.items():
        root = DATA_DIR / name
        files = {
            p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(root.rglob("*.md"))
        }
        queries = [
            Query(q["query"], tuple(q["wanted"]), q.get("form", "topic")) for q in entry["queries"]
        ]
        missing = sorted({w for q in queries for w in q.wanted} - files.keys())
        if missing:
            raise ValueError(f"{name}: wanted files absent: {missing}")
        today = dt.date.fromisoformat(entry.get("today", TODAY.isoformat()))
        out.append(NamesWorkspace(name, files, queries, today, "hand-written"))
    return out


def workspaces() -> list[NamesWorkspace]:
    return [generated(s) for s in range(1, GENERATED + 1)] + hand_written() + [demo_workspace()]


#: one unrelated note of 301 lines (the stability check adds it to a workspace)
def unrelated_note(lines: int = 301) -> str:
    rng = random.Random(301)
    stars = ("Vega", "Altair", "Deneb", "Arcturus", "Capella", "Rigel", "Sirius", "Spica")
    sky = ("clear", "hazy", "partly cloudy", "windy", "humid")
    out = ["# Stargazing log", ""]
    while len(out) < lines:
        out.append(
            f"- Night {len(out) - 1}: {rng.choice(sky)}, seeing {rng.randint(1, 5)}/5; "
            f"found {rng.choice(stars)} with the {rng.choice(('8-inch', '4-inch'))} scope, "
            f"{rng.randint(10, 95)} minutes outside."
        )
    return "\n".join(out[:lines]) + "\n"


def describe(spaces: list[NamesWorkspace]) -> str:
    """One line per workspace: files, queries and their forms."""
    out = []
    for ws in spaces:
        forms: dict[str, int] = {}
        for q in ws.queries:
            forms[q.form] = forms.get(q.form, 0) + 1
        out.append(f"{ws.name}: {len(ws.files)} files, {len(ws.queries)} queries {forms}")
    return "\n".join(out)
