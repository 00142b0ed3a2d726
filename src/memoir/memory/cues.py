"""Which sentences state something durable, and of what kind: the offline cue tables.

:func:`reading` reads one sentence: the kind of durable statement it makes (``fact``,
``preference``, ``decision``, ``plan``, ``constraint``) and where the words to keep begin
— after a frame that only asks to keep them ("Remember that …", "Please note that …",
"Keep in mind that …", "FYI, …") — or None. What it catches and what it misses is
written in :mod:`memoir.memory.offline_extractor`, its one user. Pure regular
expressions over the lower-cased sentence (curly apostrophes folded), with text in
quotation marks masked (a cue inside a quote is someone else's words), linear time,
deterministic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoir.memory.values import ItemKind

__all__ = ["MAX_WORDS", "MIN_WORDS", "Reading", "cue_form", "reading", "statement"]

MIN_WORDS, MAX_WORDS = 2, 80

# words that open a sentence without being part of it ("Oh, and …", "btw …", "OK so …")
_LEAD = (
    r"(?:(?:oh|ok|okay|also|and|btw|by the way|one more thing|actually|hey|so|but|just"
    r"|alright|right|yes|yeah|no|sure|cool|great|thanks|thank you)\s*[,:;.!-]?\s+)*"
)
_TIME = (
    r"(?:tomorrow|tonight|next (?:week|month|year|weekend|spring|summer|fall|autumn"
    r"|winter|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:weekend"
    r"|spring|summer|fall|autumn|winter|year|month)|in (?:january|february|march|april|may"
    r"|june|july|august|september|october|november|december|q[1-4]|\d+ (?:days?|weeks?"
    r"|months?|years?))|next quarter|this quarter)"
)
_PRONOUN = r"(?!(?:it|this|that|these|those|them|your|you|the idea|how|what|when)\b)"
# after a leading "always" / "never": a verb in its base form ("always run", "never push"),
# not a noun phrase or a third-person verb ("always the same test", "never works")
_IMPERATIVE = (
    r"(?!(?:the|a|an|this|that|these|those|same|so|such|some\w*|any\w*|my|your|his|her|its"
    r"|our|their|one|been|was|is|are|were|had|has|happens|when|with|again|ever|mind|gonna"
    r"|going|fun|easy|good|bad|too|more|less|fails|works)\b)(?![a-z]*[^su\W]s\b)\w+"
)
# "when you get a chance, …" is a request for now, not a standing rule
_NOT_NOW = (
    r"(?!(?:get|have|can|could|want|like|are done|are finished|finish|don't mind|do not mind"
    r"|see this|read this)\b)"
)
# the main clause of "whenever X, <do this>": an imperative, not a statement or a favour
_INSTRUCTED = (
    r"(?:please )?(?!(?:i|we|you|it|they|he|she|this|that|there|let|feel|tell|ping|lmk"
    r"|thanks|thank)\b)[a-z]+"
)
_NOT_FACT = (
    r"(?!(?:question|problem|issue|point|guess|concern|bad|mistake|fault|understanding|idea"
    r"|suggestion|thought|worry|hope|answer|request|apologies)\b)"
)
_CUES: tuple[tuple[ItemKind, re.Pattern[str]], ...] = tuple(
    (kind, re.compile("|".join(patterns)))
    for kind, patterns in (
        (
            ItemKind.DECISION,
            (
                r"\b(?:we|i)(?: have|'ve)? (?:decided|agreed|settled on|chose|opted)\b",
                r"\bwe(?:'ll| will|'re going to| are going to) (?:use|go with|stick with"
                r"|keep using|switch to|move to|adopt)\b",
                r"\blet's (?:go with|use|stick with|keep using|switch to)\b",
                r"\bwe(?: have|'ve|'re| are)? (?:switched|migrated|moved|switching|migrating"
                r"|moving) (?:over )?(?:to|from|off)\b",
                r"\b(?:we're|we are|i'm|i am) going with\b",
                r"\bthe decision is\b|\bdecision (?:is )?made\b",
            ),
        ),
        (
            ItemKind.PREFERENCE,
            (
                rf"\bi (?:really |much |strongly |generally |usually |absolutely )?(?:prefer"
                rf"|like|love|enjoy|adore|hate|dislike|detest|can't stand|cannot stand) {_PRONOUN}",
                rf"\bi (?:really |just |honestly )?(?:don't|do not) (?:really )?(?:like|enjoy"
                rf"|want|love) {_PRONOUN}",
                r"\bi(?:'d| would) (?:rather|prefer)\b",
                r"\bmy (?:favou?rite|preferred)\b",
                r"\bi(?:'m| am) (?:a (?:big |huge )?fan of|not a fan of|fond of)\b",
                r"\bi (?:always|never|usually) (?!know|remember|understand)\w+",
            ),
        ),
        (
            ItemKind.PLAN,
            (
                r"\b(?:i|we)(?:'m| am|'re| are)? (?:plan|planning) (?:to|on)\b",
                r"\b(?:i|we) intend to\b|\bi(?:'m| am) hoping to\b",
                r"\b(?:my|our|the) (?:goal|plan) is\b",
                rf"\b(?:i|we)(?:'ll| will|'m going to| am going to|'re going to) .*\b{_TIME}\b",
                rf"^{_TIME},? (?:i|we)(?:'ll| will|'m going to| am going to|'re going to)\b",
                rf"\b(?:i|we) (?:want|hope|would like|'d like) to .*\b{_TIME}\b",
            ),
        ),
        (
            ItemKind.CONSTRAINT,
            (
                rf"^(?:please )?(?:always|never) {_IMPERATIVE}",
                r"^(?:please )?(?:don't|do not) (?!worry|forget|know|think|understand|see"
                r"|get|mind|care|bother)\w+",
                r"\byou (?:should|must|to|need to|have to) (?:always|never)\b",
                rf"\bwe (?:should |must |need to |have to )?(?:always|never) {_IMPERATIVE}",
                r"\bfrom now on\b|\bremember to \w+|\bmust (?:always|never|not)\b",
                r"\b(?:going|moving) forward\b|\bin (?:the )?future\b|\bfrom here on\b",
                rf"^(?:every time|each time|whenever) [^,]{{2,80}}, {_INSTRUCTED}",
                rf"^(?:when|if) you {_NOT_NOW}[^,]{{2,80}}, {_INSTRUCTED}",
                r"\b(?:so|please) (?:please )?(?:always|never|don't|do not) (?!worry|forget|know"
                r"|think|understand|see|get|mind|care|bother)\w+",
                r"^(?:please )?(?:use|prefer|avoid|write|keep|put|name|format|run)\b.*\b(?:in this"
                r" (?:repo|repository|project|codebase|code base|team|org|company)|everywhere"
                r"|in all (?:\w+ )?(?:files|repos|projects|code))\b",
                r"\b(?:we|i) (?:can't|cannot|can not|must not|mustn't|are not allowed to|aren't"
                r" allowed to|may not) (?:use|ship|include|depend on|add|store|log|send|share"
                r"|deploy|expose)\b",
                r"\b(?:i'm|i am) allergic\b|\ballergic to\b",
                r"\bi (?:can't|cannot|can not|don't|do not) (?:eat|drink|have) \w+",
                r"\bi(?:'m| am) (?:a )?(?:vegetarian|vegan|gluten[- ]free|lactose intolerant"
                r"|diabetic|celiac)\b",
            ),
        ),
        (
            ItemKind.FACT,
            (
                rf"\bmy {_NOT_FACT}(?:[\w-]+ ){{1,3}}(?:is|are|was|were)\b",
                rf"\bmy {_NOT_FACT}[\w-]+'s\b",
                rf"\bmy {_NOT_FACT}(?:[\w-]+ ){{1,2}}(?:lives|works|studies|has(?! been)|goes to"
                r"|is called)\b",
                r"\bi (?:just |recently |now |currently )?(?:live|lived|grew up|was born|moved"
                r"|relocated|work|worked|study|studied|teach|speak)\b",
                r"\bi(?:'m| am) (?:a|an) (?!bit\b|little\b|lot\b)\w+",
                r"\bi(?:'m| am) from\b|\bi(?:'m| am) \d+ years old\b",
                r"\bi(?:'m| am) (?:married|single|divorced|engaged|retired|pregnant)\b",
                r"\bi have (?:a|an|two|three|four|\d+) (?!question|problem|issue|error|idea"
                r"|bug|doubt|suggestion|request|quick|meeting|call|minute|moment|break|sec)\w+",
                r"\bi(?:'ve| have) been \w+ing (?:for|since)\b",
                r"\bi(?:'m| am) (?:currently |still )?(?:learning|training|studying|saving up"
                r"|practi[cs]ing)\b",
                r"\bi(?:'m| am) the (?:\w+ )?(?:maintainer|owner|author|lead|manager|admin"
                r"|founder|cto|ceo|only)\b",
                r"\b(?:we're|we are|i'm|i am) on (?:python|node|java|ruby|go|rust|php|\.net"
                r"|windows|mac|macos|linux|ubuntu|debian|fedora|arch|v?\d)",
                r"\bis my (?:wife|husband|partner|sister|brother|mom|mother|dad|father|son"
                r"|daughter|kid|child|(?:best )?friend|boss|manager|colleague|cousin|aunt|uncle"
                r"|grandma|grandmother|grandpa|grandfather|niece|nephew|girlfriend|boyfriend"
                r"|fianc[eé]e?|roommate|neighbou?r|dog|cat)\b",
                rf"^{_LEAD}our {_NOT_FACT}(?:[\w-]+ ){{1,3}}(?:is|are|uses|runs|has|have|lives"
                r"|needs|targets|deploys|ships)\b",
                rf"^{_LEAD}this (?:repo|repository|project|codebase|app|service|team) (?:uses|is"
                r"|runs|has|needs|targets)\b",
                r"\b(?:i|we) \w+ (?:\w+ ){0,3}every (?:day|morning|evening|night|week|weekend"
                r"|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|other)\b",
                r"\b(?:i|we) use\b|\bour (?:team|project|company|stack|app|service|codebase"
                r"|repo) (?:uses|is|runs|has)\b",
            ),
        ),
    )
)
# a life event told in the first person ("I adopted a dog", "I just started a pottery
# class"): a fact about the user, unless it is about the work at hand ("I ran the tests")
_LIFE_EVENT = re.compile(
    r"\bi (?:just |recently |finally |also |actually )?(?:went to|visited|started|joined"
    r"|adopted|bought|finished|graduated|met|married|signed up|took up|learned|became|won"
    r"|volunteered|attended|traveled|travelled|published|quit|retired|got (?:a|an|my|married"
    r"|engaged|promoted|into))\b(?!')"
)
_WORK_AT_HAND = re.compile(
    r"\b(?:tests?|server|build|command|script|function|file|files|branch|commit|code|log"
    r"|logs|query|endpoint|pr|pull request|migration|repo|package|error|warning|output"
    r"|container|cluster|deploy\w*|install\w*|version|ticket)\b"
)
# The user's own life told without a cue above: the user (or "we", "my family and I", one
# of their people) as the subject of an event, an ongoing pursuit or a plan, in a sentence
# that places it in their life — a time of life ("last weekend", "two years ago", "when I
# was little"), one of their people, or a pursuit, place or occasion of everyday life. A
# fact when it happened or is under way, a plan when it is ahead.
_PEOPLE = (
    r"(?:wife|husband|partner|spouse|girlfriend|boyfriend|fianc[eé]e?|kids?|children|son"
    r"|sons|daughters?|baby|family|parents|mom|mum|mother|dad|father|sisters?|brothers?"
    r"|siblings?|grand\w+|cousins?|aunt|uncle|niece|nephew|in-laws|(?:best |close )?friends?"
    r"|roommates?|neighbou?rs?|dogs?|cats?|puppy|kitten|pets?|horse)"
)
_SUBJECT = (
    r"(?:^|[,;:—–-] |\b(?:and|but|so|then|because|when|after|before|since|while) |"
    rf"(?:^|\b)(?:yesterday|today|recently|lately|finally|last \w+|this \w+|over the \w+|on \w+"
    r"|(?:a|one|two|three|four|five|six|few|couple of|\d+) (?:\w+ )?(?:days?|weeks?|months?"
    r"|years?) ago),? )"
    rf"(?:i|we|my {_PEOPLE}(?: and i)?|(?:me|i) and my {_PEOPLE})"
)
_PAST = (
    r"(?:went|took|made|saw|got|had|ran|bought|found|gave|wrote|began|built|drove|flew|ate"
    r"|sang|met|spent|tried|did|came|left|brought|caught|taught|won|lost|sold|held|kept|felt"
    r"|heard|rode|swam|grew|drew|chose|fell|threw|wore|sat|stood|slept|hung|dug|fought|led"
    r"|paid|sent|shot|spoke|understood|woke|became|knew|read|was|were"
    r"|(?!(?:need|feed|seed|speed|bleed|breed|exceed|proceed|succeed|embed|shed|wed)\b)"
    r"[a-z]{2,}ed)"
)
_OWN_DOING = re.compile(
    _SUBJECT + r"(?:(?=')| (?:(?:just|recently|finally|also|actually|really|all|both|even"
    r"|once|first) )?)(?:(?P<past>"
    + _PAST
    + r"|(?:'ve|have|has) (?:just |finally |recently |already |always |never |ever |also )?"
    r"(?:been \w+ing|" + _PAST + r"|\w+en))|(?P<now>(?:'m|am|'re|are|is) (?:now |currently |still"
    r" |also |really )?(?:(?!going to\b)\w+ing|(?:really |so )?into\b))"
    r"|(?P<ahead>(?:'ll|will|'m going to|am going to|'re"
    r" going to|are going to|'re gonna|'m gonna|(?:'m|am|'re|are) (?:planning|hoping) (?:to|on)?"
    r"|(?:'m|am|'re|are) (?:so |really )?(?:excited|looking forward) (?:to|about)|can't wait to"
    r"|(?:'ve|have) (?:signed up|registered|booked))))\b"
)
_LIFE_PLACE = re.compile(
    r"\b(?:yesterday|last (?:night|week|weekend|month|year|summer|spring|fall|autumn|winter"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|time)|(?:a|one|two|three|four"
    r"|five|six|few|couple of|\d+) (?:\w+ )?(?:days?|weeks?|months?|years?) ago|the other day"
    r"|over the (?:weekend|holidays?|summer|break)|this (?:past|last) \w+|lately|these days"
    r"|when i was|as a (?:kid|child|teen(?:ager)?)|growing up"
    r"|back in (?:the day|high school|college)|in (?:19|20)\d\d"
    r"|on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends)"
    r"|in the (?:spring|summer|fall|autumn|winter)|for (?:thanksgiving|christmas|easter"
    r"|the holidays|my birthday)|this (?:fall|spring|summer|winter))\b"
    rf"|\b(?:my|our|his|her|their) (?:\w+ )?{_PEOPLE}\b|\bthe kids\b"
    r"|\b(?:trip|vacation|holiday|camping|hike|hiking|beach|lake|park|museum|concert|festival"
    r"|class|classes|course|workshop|lessons?|race|marathon|gym|yoga|church|school|college"
    r"|university|kindergarten|graduation|wedding|anniversary|birthday|party|dinner|picnic"
    r"|garden|gardening|painting|paintings|pottery|ceramics|poems?|poetry|novel|guitar|piano"
    r"|violin|drums|choir|band|shelter|charity|volunteer\w*|adoption|job|interview|promotion"
    r"|career|baby|house|apartment|home|vet|doctor|hospital|therapy|therapist|support group"
    r"|book club|team|season|road trip|road|coast|mountains?|city|country|abroad|art|music"
    r"|songs?|dance|dancing|running|bike|cycling|swimming|reading|books?|cooking|baking"
    r"|recipes?|photography|photos?|pictures?|movies?|films?|games?|sports?|soccer"
    r"|basketball|football|tennis|travel\w*|nature|sunset|ocean|forest|community|club"
    r"|group|events?|proud|grateful|thankful|excited|nervous|scared|happy|recently)\b"
)
# one of the user's people doing something ("my kids love the beach", "my daughter starts
# school in September"), not their words or thoughts
_THEIR_DOING = re.compile(
    rf"(?:^|[,;:—–-] |\b(?:and|but|so|because|when|since) )my (?:\w+ )?{_PEOPLE}"
    r" (?:(?:just|recently|finally|also|really|still|always|never) )?(?!(?:is|are|was|were|has"
    r"|have|had|said|says|told|tells|thinks|thought|asked|asks|wants|wanted|and|or|who|that"
    r"|which|will|would|can|could|should|might|may|must)\b)[a-z]{3,}\b"
)
# what a coding session does, whatever the tense: not the user's life
_SESSION_WORK = re.compile(
    r"\b(?:debug\w*|refactor\w*|rebas\w*|merg\w*|push\w*|pull\w*|commit\w*|stack ?traces?"
    r"|staging|prod(?:uction)?|main|master|config\w*|webhooks?|parser|job(?:s)? (?:failed"
    r"|ran)|failing|pipeline|repo\w*|docker\w*|kubernetes|k8s|api|database|schema|cache"
    r"|your (?:message|summary|answer|reply|email|code|pr|suggestion|change)s?)\b"
)
_QUESTION = re.compile(
    r"^(?:what|why|how|when(?= (?:do|does|did|is|are|was|were|will|can|should|would|could)\b)"
    r"|where|who|which|whose|can|could|would|should|shall|do(?! not)"
    r"|does|did|is|are|was|were|will|have|has|am)\b"
)
_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|probably|possibly|might|not sure|unsure|i guess|i suppose"
    r"|i wonder|wondering|i think (?:we|i|you|it) (?:could|should|might|can|may)|we could"
    r"|could we|should we|what if|thinking about|considering)\b"
)
_PASSING = re.compile(
    r"\b(?:broken|failing|fails|failed|crash\w*|not working|doesn't work|won't work"
    r"|errors?(?! (?:tracking|handling|reporting|monitoring|budget))|exceptions?|bugs?|typo"
    r"|dying|slow|stuck|hanging|frozen|laggy|overheating)\b"
)
_CODE = re.compile(
    r"[{};]|=>|::|\w\(.*\)|</?[a-z]+>|^\s*(?:\$ |>>>|#include|import \w|from \S+ import "
    r"|def |class |return |SELECT |sudo )"
)
# a frame that only asks to keep the words after it; "strong" frames keep them even when
# they carry no cue of their own ("Remember that the staging box is read-only.")
_FRAME = re.compile(
    r"^\s*" + _LEAD + r"(?:(?P<strong>(?:please\s+)?(?:do\s+)?(?:remember|keep in mind"
    r"|bear in mind|never forget|(?:don['’]t|do not) forget|note)|for future reference)"
    r"|(?P<weak>fyi|for the record|just so you know|for context"
    r"|heads[- ]up|p\.?s\.?|important|reminder))"
    r"(?:\s*,?\s+that\b(?!\s+(?:time|day|night|week|weekend|trip|summer|place|one|guy|girl"
    r"|song|movie|show|book|game|party|dinner|story|moment)\b)\s*,?|\s+this\s*:|\s*[:,—–-])\s*",
    re.IGNORECASE,
)
# a quotation: someone else's words, or words talked about ("the sign says "Always …"")
_QUOTED = re.compile(
    r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”|‘[^’\n]{1,400}’|(?<!\w)'[^'\n]{1,400}'(?!\w)"
    r"|«[^»\n]{1,400}»|„[^“”\n]{1,400}[“”]"
)
_STANDING = re.compile(
    r"\b(?:always|never|from now on|going forward|moving forward|in (?:the )?future"
    r"|from here on|whenever|every time|each time|by default|as a rule|at all times"
    r"|in every|in all|for all|for every|all (?:my|our) )\b"
)
# a request for work: an imperative the assistant is to carry out now
_REQUEST = re.compile(
    r"^(?:please |pls |kindly |now |then |first,? |next,? )?(?:add|fix|write|update|run"
    r"|make|create|implement|refactor|change|remove|delete|rename|move|explain|show|tell"
    r"|help|check|look|find|debug|investigate|review|try|test|build|deploy|install|set up"
    r"|setup|generate|convert|translate|summari[sz]e|rewrite|reword|rephrase|edit"
    r"|proofread|draft|list|give|send|open|close|merge|revert|push|commit|bump|format"
    r"|lint|clean|split|combine|replace|start|stop|restart|kill|print|read|search|grep"
    r"|compare|analy[sz]e|describe|suggest|recommend|get|put|copy|paste|undo|continue"
    r"|finish|verify|ensure|make sure|scaffold|port|upgrade|downgrade|pin|migrate|profile"
    r"|optimi[sz]e|document|simplify|shorten|expand|improve|polish|sort|filter|plot|draw"
    r"|design|book|order|schedule|remind|email|reply|respond|answer|pick|choose|go ahead"
    r"|let me know|walk me|teach|sum up|spin up|set|wire|hook|mock|stub|rerun|retry)\b"
    r"|^(?:i need|i want|i'd like|i would like) you to\b|^let's (?!go with|use|stick with"
    r"|keep using|switch to|always|never)\w+"
)
_HYPOTHETICAL = re.compile(
    r"\bif (?:i|we|you|they|he|she|it|someone|somebody|one)(?:'d| would| were| was| had"
    r"| wanted| want| could| decided| needed)\b|\bwhat if\b|\bsuppose\b|\bsupposing\b"
    r"|\bimagine\b|\blet's say\b|\bsay (?:that )?(?:i|we|you)\b|\bhypothetical\w*"
    r"|\bin theory\b|\btheoretically\b|\bassuming\b|\bpretend\b|\bin an? (?:perfect|ideal)"
    r" world\b|\bif only\b|\b(?:i|we) wish\b|\bwould (?:it|i|we|you|that)\b"
    r"|\b(?:i|we|you)(?:'d| would) (?!(?:really |much |strongly )?(?:rather|prefer|like|love)\b)\w+"
)
_COMPLAINT = re.compile(
    r"\b(?:ugh+|argh+|gah+|sigh|meh|ffs|wtf|omg|jeez|geez|dammit|damn\w*|goddamn\w*|crap"
    r"|bah|yikes|smh|sheesh|grr+|annoying|frustrating|infuriating|ridiculous|driving me"
    r"|sick (?:and tired )?of|tired of|fed up|so done with|can't believe|cannot believe"
    r"|every single time|yet again|once again|of course it|here we go again|why does"
    r"|why do|why is|why are|why can't|why won't)\b"
)
# someone else's words reported: "my boss said we always deploy on Fridays"
_REPORTED = re.compile(
    r"\b(?!(?:i|we|you|as|which|that|it)\b)[a-z][\w'-]* (?:said|says|wrote|writes|claimed"
    r"|claims|insisted|insists|mentioned|told (?:me|us)|tells (?:me|us)|asked (?:me|us))\b"
)
# what only holds for the moment: not a standing rule, preference or decision
_ONE_OFF = re.compile(
    r"\b(?:for now|right now|just now|this time|just this once|for the moment|at the moment"
    r"|temporarily|for today|for this (?:task|pr|one|change|commit|file|function|session"
    r"|run|ticket))\b"
)
_ONE_OFF_RULE = re.compile(r"\b(?:today|tonight|yet|this afternoon|this morning)\b")
# a decision about something only the conversation names ("let's go with that")
_DECIDED_REFERENT = re.compile(
    r"\b(?:go with|use|stick with|keep using|switch to|decided on|settled on|agreed on|chose"
    r"|opted for|going with|do) (?:that|this|it|these|those|yours|your (?:\w+ )?(?:idea"
    r"|suggestion|approach|version|plan|option|fix)|the (?:first|second|third|last|other"
    r"|latter|former|same|new|old) (?:one|option|approach|version)|option \w+|plan \w)"
    r"(?: then| instead| please)?[.!]*$"
)
_LEADING = re.compile("^" + _LEAD)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})


@dataclass(frozen=True, slots=True)
class Reading:
    """What a sentence states: its ``kind``, and the offset in the sentence where the
    words to keep begin (past a frame like "Remember that"; 0 without one)."""

    kind: ItemKind
    start: int = 0

    def kept(self, sentence: str) -> str:
        """The words to keep, their first letter upper-cased when a frame was cut."""
        rest = sentence[self.start :].strip()
        return rest[:1].upper() + rest[1:] if self.start else rest


def cue_form(sentence: str) -> str:
    """Lower case, curly apostrophes straight, whitespace collapsed: what the cues read."""
    return " ".join(sentence.translate(_APOSTROPHES).lower().split())


def _kind(folded: str) -> ItemKind | None:
    kind = next((kind for kind, pattern in _CUES if pattern.search(folded)), None)
    if kind is None and _LIFE_EVENT.search(folded) and not _WORK_AT_HAND.search(folded):
        return ItemKind.FACT
    if kind is None:
        return _own_life(folded)
    return kind


def _own_life(folded: str) -> ItemKind | None:
    """A fact (done or under way) or a plan (ahead) of the user's own life, or None: see
    ``_OWN_DOING``; never about the work at hand."""
    doing = _OWN_DOING.search(folded)
    theirs = doing is None and _THEIR_DOING.search(folded) is not None
    if not (theirs or (doing is not None and _LIFE_PLACE.search(folded))):
        return None
    if _WORK_AT_HAND.search(folded) or _SESSION_WORK.search(folded):
        return None
    return ItemKind.PLAN if doing is not None and doing.group("ahead") else ItemKind.FACT


def _masked(sentence: str) -> tuple[str, float]:
    """The sentence with its quotations replaced by a placeholder, and the share of its
    characters they held."""
    quoted = 0

    def cut(m: re.Match[str]) -> str:
        nonlocal quoted
        quoted += len(m.group())
        return ' "…" '

    masked = _QUOTED.sub(cut, sentence)
    return masked, quoted / max(1, len(sentence.strip()))


def _bare(folded: str) -> str:
    """The folded sentence without the words that open it ("Also, …", "OK so …")."""
    return _LEADING.sub("", folded)


def _excluded(sentence: str, folded: str) -> bool:
    """Whether the sentence is not a statement of the user's at all: a question, a hedge
    or hypothetical, a complaint, reported speech, code, or a request for work now."""
    if sentence.rstrip(" \"'”’)]").endswith("?") or _CODE.search(sentence):
        return True
    bare = _bare(folded)
    if _QUESTION.match(bare) or (_REQUEST.match(bare) and not _STANDING.search(bare)):
        return True
    return any(p.search(folded) for p in (_HEDGE, _HYPOTHETICAL, _COMPLAINT, _REPORTED))


def _durable(kind: ItemKind, folded: str) -> bool:
    if kind is ItemKind.FACT:
        return not _PASSING.search(folded)
    if kind is ItemKind.PLAN:
        return True
    if kind is ItemKind.DECISION and _DECIDED_REFERENT.search(folded):
        return False
    if kind is ItemKind.CONSTRAINT and _ONE_OFF_RULE.search(folded):
        return False
    return not _ONE_OFF.search(folded)


# "X, keep that in mind": the frame after the words it asks to keep
_KEEP_TAIL = re.compile(
    r"[,;:.-]\s*(?:so |and )?(?:please )?(?:keep|bear) (?:that|this|it) in mind\b"
    r"|[,;:.-]\s*(?:please )?remember (?:that|this)[.!]*$",
)


def reading(sentence: str) -> Reading | None:
    """What durable statement ``sentence`` makes, or None (see the module doc)."""
    frame = _FRAME.match(sentence)
    if frame is not None and not sentence[frame.end() :].strip():
        frame = None  # "Remember that." alone: nothing to keep here
    start = frame.end() if frame is not None else 0
    strong = frame is not None and frame.group("strong") is not None
    strong = strong or bool(_KEEP_TAIL.search(cue_form(sentence)))
    masked, quoted = _masked(sentence[start:])
    if quoted > 0.5 or not MIN_WORDS <= len(masked.split()) <= MAX_WORDS:
        return None
    folded = cue_form(masked)
    kind = _kind(_bare(folded))
    if (kind is None and not strong) or _excluded(masked, folded):
        return None
    if kind is None:
        return Reading(ItemKind.FACT, start)  # asked to be kept: a fact, whatever its cue
    if not (strong or _durable(kind, folded)):
        return None
    return Reading(kind, start)


def statement(sentence: str) -> ItemKind | None:
    """The kind of durable statement ``sentence`` makes, or None."""
    found = reading(sentence)
    return None if found is None else found.kind
