"""The general register: everyday narration, dialogue, how-to instructions, local news and messages.

Five sub-categories, and a sixth whose text copies its input (``general/extract``: a passage, then its
main points, :mod:`corpus.general_extract`), added later and drawn in the second stage of the training draw
(:mod:`corpus.generate`). Compared with the legal register the vocabulary is wide (hundreds of everyday
nouns, verbs and adjectives drawn independently per sentence) and the sentence frames are short and
many, so the next word is much less predictable: that difference in entropy is the gap the bundled demo
measures. The vocabularies live in :mod:`corpus.words`.
"""

from __future__ import annotations

from corpus import general_extract, slots, words
from corpus.grammar import Expansion, Grammar, SlotFn
from corpus.spec import CategorySpec, RegisterSpec

BINDINGS = ("hero", "he", "him", "his", "himself", "friend", "town", "city", *general_extract.BINDINGS)


def bind(exp: Expansion, category: str, *, particulars: bool = True) -> None:
    """Fix the protagonist (and pronouns), a friend, the home town and a nearby city of one text.
    (``particulars`` concerns legal redlines only: the registers share one ``bind`` signature.)"""
    rng = exp.rng
    female = rng.random() < 0.5
    exp.bind("hero", rng.choice(slots.FEMALE_NAMES if female else slots.MALE_NAMES))
    for name, (her, his) in {
        "he": ("she", "he"),
        "him": ("her", "him"),
        "his": ("her", "his"),
        "himself": ("herself", "himself"),
    }.items():
        exp.bind(name, her if female else his)
    friend = exp.bindings["hero"]
    while friend == exp.bindings["hero"]:
        friend = rng.choice(slots.FEMALE_NAMES + slots.MALE_NAMES)
    exp.bind("friend", friend)
    exp.bind("town", slots.town(rng))
    exp.bind("city", rng.choice(words.CITIES))
    if category == general_extract.NAME:  # after every other draw, so the other categories' streams stay
        general_extract.bind(exp)


def _words(vocabulary: tuple[str, ...]) -> list[str]:
    return list(vocabulary)


def _number(low: int, high: int) -> SlotFn:
    return lambda exp: slots.number_words(exp.rng.randint(low, high))


def _price(exp: Expansion) -> str:
    # Shop prices: "£12" or "£4.99".
    rng = exp.rng
    pounds = rng.randint(1, 95)
    return f"£{pounds}" if rng.random() < 0.5 else f"£{pounds}.{rng.choice(('99', '50', '49', '25'))}"


def _sum(exp: Expansion) -> str:
    # Sums raised or spent by a town: "£2,400", "£150,000".
    rng = exp.rng
    value = rng.choice((1, 2, 3, 5, 8, 12, 15, 25, 40, 60, 150, 250)) * rng.choice((100, 1000))
    return f"£{slots.figures(value)}"


def _clock(exp: Expansion) -> str:
    rng = exp.rng
    hour = rng.randint(1, 11)
    minute = rng.choice(("", "", ".15", ".30", ".45", ".10", ".50"))
    return f"{hour}{minute} {rng.choice(('am', 'pm', 'pm'))}"


SLOTS: dict[str, SlotFn] = {
    "name": lambda exp: exp.rng.choice(slots.FEMALE_NAMES + slots.MALE_NAMES),
    "full_name": lambda exp: slots.person(exp.rng),
    "surname": lambda exp: exp.rng.choice(slots.SURNAMES),
    # Distinct items, so a list never names the same thing twice.
    "supplies": lambda exp: slots.series(slots.pick_in_order(exp, "supply", 2, 4), "and"),
    "other_town": lambda exp: slots.town(exp.rng),
    "company": lambda exp: slots.company(exp.rng),
    "small_num": _number(2, 12),
    "mid_num": _number(12, 60),
    "age": _number(6, 90),
    "price": _price,
    "sum": _sum,
    "clock": _clock,
    "minutes": lambda exp: exp.rng.choice(words.SPANS),
    "month": lambda exp: exp.rng.choice(slots.MONTHS),
    "weekday": lambda exp: exp.rng.choice(slots.WEEKDAYS),
    "ordinal": lambda exp: slots.ordinal_words(exp.rng.randint(1, 12)),
    "year": lambda exp: str(exp.rng.randint(1962, 2024)),
}

RULES: dict[str, list[str]] = {
    # --- vocabularies ------------------------------------------------------------------------------
    "noun": _words(words.NOUNS),
    "adj": _words(words.ADJECTIVES),
    "place": _words(words.PLACES),
    "animal": _words(words.ANIMALS),
    "food": _words(words.FOODS),
    "job": _words(words.JOBS),
    "feeling": _words(words.FEELINGS),
    "done": _words(words.PAST_ACTIVITIES),
    "do": _words(words.ACTIVITIES),
    "time": _words(words.TIMES),
    "weather": _words(words.WEATHER),
    "relative": _words(words.RELATIVES),
    "topic": _words(words.TOPICS),
    "verb_past": _words(words.VERBS_PAST),
    "verb_intr": _words(words.VERBS_INTRANSITIVE),
    "adjunct": _words(words.ADJUNCTS),
    "subject": _words(words.SUBJECTS),
    "conj": _words(words.CONNECTIVES),
    "opener": _words(words.OPENERS),
    "group": _words(words.GROUPS),
    "group_doing": _words(words.GROUP_ACTIVITIES),
    # A free clause: the main source of the general register's variety (each slot is drawn anew).
    "clause": [
        "{subject} {verb_past} {thing} {adjunct}",
        "{subject} {verb_past} {thing}",
        "{subject} [{adverb} ]{verb_past} {thing} {adjunct}",
        "{subject} {verb_intr} {adjunct}",
        "{subject} {verb_intr}",
        "{subject} [{adverb} ]{verb_intr} {adjunct}",
    ],
    "adverb": _words(words.ADVERBS),
    "imperative": _words(words.IMPERATIVES),
    "thing": ["a {noun}", "a {adj} {noun}", "the {adj} {noun}", "an old {noun}", "{his} {noun}", "a {noun}"],
    "person_ref": ["{name}", "{full_name}", "{his} {relative}", "a {job}", "an old friend from school"],
    "helper": ["a friend", "a neighbour", "someone at the shop", "a family member", "a {job}"],
    # --- narration ---------------------------------------------------------------------------------
    "narration_open": [
        "{hero} had lived in {town} for {small_num} years, and in all that time [nothing|very little] "
        "[unusual|exciting|strange] had ever happened [there|on {his} street].",
        "It was {time} when {hero} [first noticed|finally found|heard about] {thing}.",
        "Every {weekday} {hero} [walked|cycled|drove|took the bus] to {place}[ to {do}| before work| "
        "with {friend}].",
        "The [summer|winter|autumn|spring] {hero} turned {age}, {his} family moved to {town}.",
        "{hero} worked as a {job} in {town}, and {he} [liked|loved|did not much enjoy] the work.",
        "Nobody in {town} could remember [when|why] the {adj} {noun} had first appeared outside {place}.",
        "On the morning of {his} {ordinal} day in {town}, {hero} woke up [early|late|to the sound of "
        "rain] and decided to {do}.",
        "When {hero} opened the door, {friend} was standing on the step holding {thing}.",
        "{hero} had always wanted to [learn to play the {instrument}|visit {city}|build a boat|open a "
        "small café|grow {his} own vegetables].",
        "For as long as {he} could remember, {hero} had kept {thing} [in a drawer|on the "
        "windowsill|under the bed|in the garden shed].",
        "The storm arrived [without warning|just after lunch|in the middle of the night], and by "
        "morning [half|most] of {town} was [without power|under snow|cut off].",
        "{hero} was {feeling} when {he} [got off the train|arrived] in {city} for the first time.",
    ],
    "narration_body": [
        "{clause}.",
        "{clause} {conj} {clause}.",
        "{opener}, {clause}.",
        "{opener}, {clause} {conj} {clause}.",
        "{clause}.",
        "{clause} {conj} {clause}.",
        "{opener}, {clause}.",
        "{opener}, {clause} {conj} {clause}.",
        "{clause}.",
        "{clause} {conj} {clause}.",
        "{opener}, {clause}.",
        "{opener}, {clause} {conj} {clause}.",
        "{he} {done} and then {done}.",
        "[Later that day|The next morning|After a while|A few minutes later|By the afternoon|That "
        "evening], {he} {done}.",
        "{friend} [said|thought|suggested] that they should {do} [instead|together|the following day].",
        "{place} was [busier|quieter|colder|warmer|emptier] than usual, and {hero} [waited|sat|stood] "
        "by the [window|door|counter] for [a while|twenty minutes|nearly an hour].",
        "{he} felt {feeling} [when|because] {friend} [had not called|was late again|had forgotten "
        "{his} birthday|had sent a postcard from {city}].",
        "Outside, {weather}.",
        "On the way home {he} [met|ran into|passed] {person_ref}, who was carrying {thing}.",
        "It took {him} [most of the afternoon|three attempts|longer than expected] to {do}[, but in "
        "the end it was worth it].",
        'There was a note on the [kitchen table|fridge|front door] that said simply, "^{note}."',
        "{his} {relative} had once told {him} that [you should never|it was bad luck to] {do} on a "
        "{weekday}.",
        "{hero} [laughed|smiled|sighed|shook {his} head] and [put the {noun} back on the shelf|went "
        "to make a cup of tea|closed the window].",
        "By the time {he} [got home|reached {place}|had finished], the [sun had set|streetlights were "
        "on|shops had closed].",
        "{animal} was sitting on the [garden wall|roof of the shed|fence] [watching {him}|as if it "
        "owned the place].",
        "{he} picked up the {adj} {noun}, turned it over [in {his} hands|slowly] and wondered [who it "
        "belonged to|how old it was|where it had come from].",
        "[For a moment|For a long time] nobody said anything.",
        "{friend} arrived [at {clock}|just before dinner|half an hour late] with {thing} and [a big "
        "smile|an apology|a bag of oranges].",
        "That evening they [cooked {food}|walked along the river|played cards|watched an old film] "
        "and talked about {topic}.",
        "The {noun} had cost {price} [at the market|in a shop in {city}|second-hand], which seemed "
        "[a lot|very little|about right] at the time.",
        "{he} wrote [a list|a long letter|a few lines in {his} notebook] about {topic} and then "
        "[fell asleep|went for a walk|made {food}].",
        "Somewhere down the street, [a dog was barking|someone was practising the {instrument}|a "
        "car alarm went off].",
    ],
    "narration_close": [
        "It was, {he} decided, [the best|the strangest|a surprisingly good|a very long] day [in "
        "years|for a long time|of the summer].",
        "[Years later|Much later|Even now], {hero} [still remembers|sometimes thinks about] that "
        "[afternoon|week|summer] in {town}.",
        "[In the end|After all that], {he} [went to bed early|made a pot of tea|phoned {friend}] and "
        "[slept well|felt much better|laughed about it].",
    ],
    "instrument": ["piano", "violin", "guitar", "trumpet", "cello", "drums", "flute", "accordion"],
    "note": [
        "back at six",
        "gone to the shops",
        "feed the cat",
        "don't forget the keys",
        "call me when you get this",
        "dinner is in the oven",
        "the plumber is coming on {weekday}",
        "sorry about the {noun}",
    ],
    # --- dialogue ----------------------------------------------------------------------------------
    "speaker": ["{hero}", "{friend}", "{hero}", "{friend}", "{his} {relative}"],
    "said": ["said", "said", "replied", "answered", "added", "whispered", "called out", "laughed"],
    "dialogue_open": [
        '"^{question}?" asked {speaker}.',
        '"^{statement}," said {speaker}.',
        '{speaker} looked up from {thing} and said, "^{statement}."',
        '"^{exclaim}!" [cried|shouted|said] {speaker}.',
        '"^{greeting}, {friend}," said {hero}. "^{question}?"',
        '"^{greeting}!" {hero} called from the [kitchen|hallway|garden|top of the stairs].',
        '{hero} put down {thing} and asked {friend}, "^{question}?"',
    ],
    "dialogue_body": [
        '"^{clause} {conj} {clause}," {said} {speaker}.',
        '"[Well|Honestly|Apparently|So], {clause}."',
        '"^{clause}[, you know|, honestly| again]," {said} {speaker}.',
        '"[Did you hear|Guess what]? ^{clause}."',
        '"^{imperative} the {noun}[, please| first| before {name} sees it]!" [said|shouted|called] '
        "{speaker}.",
        "{speaker} {verb_past} {thing} and said nothing.",
        '"^{answer}," {said} {speaker}.',
        '"^{statement}," {speaker} {said}, "but {statement2}."',
        '"^{question}?" asked {speaker}.',
        '"^{exclaim}!" {said} {speaker}.',
        '{speaker} [shrugged|frowned|smiled|nodded|laughed]. "^{answer}."',
        '"^{statement}."',
        '"^{answer}. ^{statement2}."',
        '"[Really|Are you sure|Since when]?" asked {speaker}.',
        '"^{question}?" {he} asked, [looking at the {noun}|without turning round|a little too quickly].',
        "[There was a pause.|Nobody answered.|The kettle began to whistle.]",
        '"[Fine|All right|OK], {statement2}," {said} {friend}.',
        '"I told you, {statement2}," {said} {speaker}.',
        '"^{statement}," {he} {said}.',
        '"[Thanks|Thank you|Cheers], that\'s [brilliant|kind of you|a relief]," said {speaker}.',
        '"^{greeting}, {name}! ^{question}?"',
    ],
    "greeting": ["hello", "hi", "morning", "good evening", "there you are", "hey"],
    "question": [
        "have you seen my {noun}",
        "what time does {place} close",
        "do you want to come to {place} with me",
        "where did you put the {noun}",
        "how was your trip to {city}",
        "are you coming to the party on {weekday}",
        "did you remember to {do}",
        "could you pass me the {noun}",
        "why is the {noun} on the kitchen floor",
        "is it going to rain later",
        "what are we having for dinner",
        "when does the next train to {city} leave",
        "have you ever been to {other_town}",
        "can I borrow your {noun} for the weekend",
        "who left the back door open",
        "what did the {job} say",
        "how much was the {noun}",
        "shall we {do} tomorrow",
        "is that your {adj} {noun}",
        "do you know anyone who can {do}",
    ],
    "statement": [
        "{clause}",
        "{clause} {conj} {clause}",
        "I {verb_past} {thing} {adjunct}",
        "I think it was on the table this morning",
        "the bus was late again",
        "we should leave before the traffic gets bad",
        "I have never seen anything like it",
        "you look tired",
        "it is only a short walk from here",
        "my {relative} is coming to stay next week",
        "I forgot to buy milk",
        "{place} is closed on {weekday}s",
        "I'll call you when I get to {city}",
        "the {noun} is broken again",
        "I found it in the garden",
        "{name} says hello",
        "we need more {food}",
        "I've been meaning to {do} for weeks",
        "it smells wonderful in here",
        "the {job} will be here at {clock}",
        "I'm not sure this is a good idea",
        "that's the third time this week",
        "you were right about {topic}",
    ],
    "statement2": [
        "I'm not sure it will help",
        "we can try again tomorrow",
        "don't tell {name}",
        "it was worth it",
        "nobody listens to me",
        "you'll need a coat",
        "the shop shuts at {clock}",
        "it's probably nothing",
        "we should ask {name} first",
        "it might rain",
    ],
    "answer": [
        "yes, it was on the shelf by the door",
        "not since last {weekday}",
        "probably around {clock}",
        "I'm not sure, ask {name}",
        "only if it stops raining",
        "[in the kitchen drawer|next to the {noun}|under the {noun}], I think",
        "no, but I'd like to",
        "it was fine, apart from the weather",
        "about {price}, I think",
        "I already did",
        "maybe next week",
        "it's in the car",
        "of course",
    ],
    "exclaim": [
        "look at that",
        "watch out",
        "I don't believe it",
        "that's wonderful",
        "hurry up",
        "not again",
        "what a mess",
        "happy birthday",
        "careful with that {noun}",
        "there it is",
    ],
    # --- instructions ------------------------------------------------------------------------------
    "instructions_open": [
        "To {goal}, you will need {supplies}.",
        "Here is how to {goal}[ in {small_num} simple steps|, even if you have never done it before].",
        "If your {device} [will not turn on|keeps making a strange noise|has stopped working], [do "
        "not worry|there are a few things you can try].",
        "Learning to {goal} is easier than it looks[, as long as you are patient|, and it saves money].",
        "Before you start, make sure that {check}.",
        "These instructions explain how to {goal}[ safely|, step by step|].",
        "You do not need any special tools to {goal}[, but it helps to have {supply}].",
    ],
    "instructions_body": [
        # Listed in the order a how-to runs; the category keeps this order (ordered=True).
        "Start by clearing a space [on the table|on the floor|near a window|in the kitchen].",
        "It is a good idea to {step} [first|before you begin].",
        "First, {step}.",
        "Next, {step}.",
        "Then {step} and {step}.",
        "Now {imperative} the {noun} {adjunct_step}[ and {imperative} it {adjunct_step}].",
        "Put the {noun} [on the table|in the sink|on a tray|next to the {noun}|in a safe place] and "
        "leave it {adjunct_step}.",
        "After that, {step}.",
        "Once [that is done|it has cooled down|everything is dry], {step}.",
        "Make sure that {check}.",
        "If {problem}, {step}.",
        "Do not {step}[ more than once| too early| without checking first].",
        "You can also {step} if you prefer.",
        "Remember to {step}.",
        "[Tip|Note]: {step} before you {step}.",
        "This [should take|usually takes] about {minutes}.",
        "If in doubt, ask {helper} to help you {step}.",
        "When you are happy with the result, {step}.",
        "Finally, {step}.",
    ],
    "goal": [
        "make a simple loaf of bread",
        "fix a dripping tap",
        "reset your wireless router",
        "repot a houseplant",
        "clean a cast-iron pan",
        "plan a walking holiday",
        "change a bicycle tyre",
        "make pancakes for four people",
        "paint a small room",
        "set up a new printer",
        "grow tomatoes on a balcony",
        "back up the photos on your phone",
        "hang a heavy mirror",
        "make a vegetable soup",
        "train a puppy to sit",
        "pack for a long flight",
        "build a simple bookshelf",
        "remove a stain from a carpet",
        "bleed a radiator",
        "sharpen a kitchen knife",
    ],
    "device": [
        "laptop",
        "washing machine",
        "printer",
        "router",
        "phone",
        "dishwasher",
        "kettle",
        "television",
        "fridge",
        "bicycle lamp",
    ],
    "supply": [
        "a clean cloth",
        "a small screwdriver",
        "some warm water",
        "a large bowl",
        "a tape measure",
        "a pencil",
        "a pair of gloves",
        "a bucket",
        "some old newspaper",
        "a spare battery",
        "a ruler",
        "a wooden spoon",
        "a roll of tape",
        "some patience",
        "a torch",
        "a sharp knife",
    ],
    "step": [
        "{imperative} the {noun} [with|using] {supply}",
        "{imperative} the {adj} {noun} {adjunct_step}",
        "{imperative} the {noun}",
        "preheat the oven to {oven} degrees",
        "wash your hands",
        "unplug the {device} from the wall",
        "remove the back cover",
        "fill the kettle with fresh water",
        "turn the water off at the mains",
        "loosen the screws with a small screwdriver",
        "mix the flour and the salt in a large bowl",
        "add two eggs and stir well",
        "water the soil until it is damp",
        "press and hold the power button for {small_num} seconds",
        "check that the cable is firmly connected",
        "choose a sunny spot",
        "dig a hole about twice as wide as the pot",
        "write down the serial number",
        "let the mixture rest for {minutes}",
        "sand the surface lightly",
        "apply a thin coat of paint",
        "wait {minutes}",
        "open the settings menu",
        "wipe the surface with a damp cloth",
        "measure the wall twice",
        "mark the position with a pencil",
        "tighten the nut by hand",
        "cover the bowl with a tea towel",
        "lay some old newspaper on the floor",
        "read the label carefully",
        "switch the {device} back on",
        "put everything back in the box",
        "take a photo of the wiring",
        "knead the dough for {minutes}",
        "rinse it under cold water",
        "leave it to dry overnight",
        "keep the receipt",
        "test it with a small amount",
    ],
    "adjunct_step": [
        "carefully",
        "gently",
        "on a flat surface",
        "with both hands",
        "in a warm place",
        "for {minutes}",
        "until it is smooth",
        "from left to right",
        "over the sink",
        "in small circles",
        "at least twice",
        "outside if you can",
        "one piece at a time",
        "as evenly as possible",
    ],
    "oven": ["180", "200", "220", "160", "190"],
    "check": [
        "the {device} is switched off",
        "you have everything you need",
        "the surface is clean and dry",
        "the room is well ventilated",
        "the water is not too hot",
        "the lid is on tightly",
        "nobody is standing behind you",
        "the screws are tight",
        "you have read the instructions on the packet",
        "the light is flashing green",
    ],
    "problem": [
        "the light keeps flashing red",
        "the dough is too sticky",
        "the paint looks patchy",
        "it still does not work",
        "the water will not drain",
        "the screw will not turn",
        "you cannot find the button",
        "the soil feels dry",
        "the mixture is too thick",
        "the tyre goes flat again",
    ],
    # --- local news --------------------------------------------------------------------------------
    "news_open": [
        "The town council of {town} voted on {weekday} to {council_action}[, despite objections from "
        "some residents].",
        "[Hundreds|Dozens|Thousands] of [people|residents|visitors] gathered in {town} on {weekday} "
        "for the [annual|first|long-awaited] {event}.",
        "A new {business} has opened on {street} in {town}[, creating {small_num} jobs].",
        "Police in {town} are appealing for witnesses after {incident}.",
        "Heavy [rain|snow|wind] caused [disruption|delays|flooding] across the {region} on {weekday}, "
        "with [several roads closed|trains cancelled|schools closed].",
        "{company} announced on {weekday} that it plans to {corp_action}.",
        "The {town} [football|cricket|netball|rugby] club won its first [trophy|league title] in "
        "{small_num} years on {weekday}.",
        "A {age}-year-old {job} from {town} has raised {sum} for [the local hospital|a "
        "children's charity|the lifeboat station] by {feat}.",
    ],
    "news_body": [
        "[Earlier this year|Last {month}|On {weekday}|Last week], {clause}.",
        "[According to {full_name}, |Witnesses said that |It is understood that ]{clause} {conj} {clause}.",
        "[Last {weekday}|Earlier in the day|Later that afternoon], {clause}.",
        "[Some residents|Several people|One shopkeeper] said that {clause} {conj} {clause}.",
        "{group} [will be|are] {group_doing} [in|near|around] {place} [on {weekday}|next {month}|all "
        "summer].",
        "The {adj} {noun} [outside|near|in] {place} [has been|was] [stolen|repaired|removed|painted|"
        "replaced] [for the {ordinal} time|last week|on {weekday}].",
        "{full_name}, [the|a] {job} who [organised|helped to organise|ran] the {event}, said the day had "
        "been [a huge success|hard work|great fun|worth every minute].",
        "[Police|Officers|The fire service|Paramedics] [were called to|attended|arrived at] {place} "
        "[shortly after|at about] {clock}[ on {weekday}].",
        "[Witnesses|Passers-by|Neighbours] said they [saw|heard|noticed] {thing} {adjunct}.",
        "{group} spent [the weekend|several days|the whole of {month}] {group_doing} [in|near|around] "
        "{place}.",
        "[Earlier this year|Last {month}|On {weekday}], {clause}.",
        '"^{quote}," said {full_name}, [a spokesperson for the council|the head teacher|the '
        "owner|a local resident|one of the organisers].",
        "[According to the council,|Figures from the council show that] [more than|nearly|about] "
        "{mid_num} [per cent of residents|families|businesses] [took part|were affected|have signed "
        "the petition].",
        "The [work|project|festival] is expected to [begin|finish|take place] in {month}[ and will "
        "cost around {sum}].",
        "Residents have been asked to {advice}.",
        "It is the {ordinal} time [this year|since {month}] that the [road|bridge|station] has "
        "[closed|flooded|been damaged].",
        "Organisers said that [the event|the market|the race] had been [a great success|busier than "
        "expected|slightly affected by the weather].",
        "A decision is expected [next month|later this year|by the end of {month}].",
        "Anyone with information is asked to contact [the police|the council|the organisers] on "
        "[{phone}|the non-emergency number].",
        "Tickets cost {price}[ and are available from {place}| for adults, and children go free].",
        "The [road|bridge|library|station] will remain closed until {weekday}[ while repairs are "
        "carried out].",
        "{full_name}, who has lived in {town} for {mid_num} years, described the [decision|result|"
        'news] as "{verdict}".',
        "[Last year|In {year}], [a similar event|the same scheme] [raised|cost] {sum}.",
        "The [mayor|head of the council|local MP] is expected to visit {town} on {weekday}.",
        "[Traffic|Parking] in the town centre [will be restricted|may be difficult] [during the "
        "event|until the work is finished].",
        "More information is available from {place} or on the council's website.",
    ],
    "street": [
        "the High Street",
        "Station Road",
        "Mill Lane",
        "Church Street",
        "Market Square",
        "Bridge Street",
        "the Parade",
        "King Street",
    ],
    "region": ["north of the county", "coast", "valley", "region", "south-west", "whole county"],
    "council_action": [
        "build a new skate park",
        "close the old swimming pool",
        "plant two hundred trees along the river",
        "extend the library's opening hours",
        "ban cars from the market square on {weekday}s",
        "repair the footbridge",
        "double the number of bins in the park",
        "turn the old bus depot into flats",
        "keep the street lights on all night",
    ],
    "event": [
        "flower show",
        "summer fair",
        "charity fun run",
        "food festival",
        "bonfire night",
        "farmers' market",
        "brass band concert",
        "dog show",
        "Christmas lights switch-on",
        "boat race",
    ],
    "business": [
        "bakery",
        "bookshop",
        "bicycle repair shop",
        "café",
        "cinema",
        "climbing wall",
        "garden centre",
        "hardware shop",
        "vet's surgery",
        "pizza restaurant",
    ],
    "incident": [
        "a van crashed into a bus shelter on {street}",
        "a statue was stolen from the park",
        "several cars were damaged overnight",
        "a fire at a warehouse on the edge of town",
        "a dog went missing from a garden on {street}",
        "a window was smashed at the post office",
    ],
    "corp_action": [
        "open a new factory near {town}",
        "hire {mid_num} new staff",
        "move its head office to {city}",
        "close its branch in {town}",
        "launch a new range of {food}",
        "cut its prices",
    ],
    "feat": [
        "running {mid_num} miles",
        "swimming across the bay",
        "knitting {mid_num} scarves",
        "baking cakes every weekend",
        "walking to {city}",
        "cycling the length of the country",
    ],
    "quote": [
        "we are delighted with the result",
        "this is a great day for {town}",
        "we have waited a long time for this",
        "it has been a difficult year for everyone",
        "we could not have done it without the volunteers",
        "safety has to come first",
        "we hope to see everyone there next year",
    ],
    "verdict": [
        "long overdue",
        "a great day for the town",
        "a real shame",
        "the best news in years",
        "a complete waste of money",
        "exactly what we needed",
    ],
    "advice": [
        "avoid the area if possible",
        "keep their pets indoors",
        "check the council's website for updates",
        "report any damage to the council",
        "leave extra time for their journeys",
        "keep their windows closed",
    ],
    "phone": ["01632 {small_digits}", "0808 {small_digits}"],
    "small_digits": ["960 111", "960 482", "157 900", "224 618", "330 275"],
    # --- messages and emails -----------------------------------------------------------------------
    "messages_open": [
        "Hi {friend}, just a quick note to {purpose}.",
        "Dear {title} {surname}, thank you for your [email|letter|message] of {weekday}.",
        "Hey {friend}! Are you free on {weekday} [evening|afternoon|morning]?",
        "Hello everyone, just to let you know that {announcement}.",
        "Good morning {friend}, I hope you had a [good|lovely|relaxing] weekend.",
        "Hi {friend}, sorry I missed your call [yesterday|earlier|on {weekday}].",
        "Dear all, [a quick reminder that|please note that] {announcement}.",
        "{friend}, are you still okay for {clock} on {weekday}?",
    ],
    "messages_body": [
        "[Oh, and|Also|By the way|Anyway], {clause}.",
        "[So|Honestly|Basically], {clause} {conj} {clause}.",
        "[In other news|Meanwhile|Apparently|Oh], {clause}.",
        "[Last night|Earlier today|At the weekend], {clause} {conj} {clause}.",
        "[Can|Could] you [remind|ask] {name} to {do}?",
        "I [left|forgot] {thing} [at your place|in the car|at {place}], could you [keep it safe|bring it "
        "on {weekday}]?",
        "[We've|I've] [booked|found|ordered] {thing} for {weekday}[, so that's one less thing to worry "
        "about].",
        "The {noun} [you lent me|from the market|I ordered] [is|was] [perfect|a bit small|broken, sadly|"
        "exactly what I needed].",
        "Let's [meet|have lunch|go for a walk] [at|near|outside] {place} [at {clock}|after work|on "
        "{weekday}].",
        "[Yesterday|Last week|On {weekday}|This morning] {clause}.",
        "[Guess what|Funny thing|You won't believe it]: {clause}.",
        "I'm running about {minutes} late because {late_reason}.",
        "Could you [bring|pick up] {thing} on your way?",
        "The [meeting|dinner|rehearsal|match] has been moved to {clock} on {weekday}.",
        "Let me know if [that works for you|you need anything else|you can't make it].",
        "I've attached [the photos from {weekday}|the form you asked for|a map of how to get there|the "
        "recipe for {food}].",
        "Thanks again for [the lovely dinner|your help with the move|lending me {thing}].",
        "Don't forget that {announcement}.",
        "Please reply by {weekday} [if you can|so that I can book a table|so we know numbers].",
        "[We were|I was] thinking of going to {place} and then [getting {food}|going for a walk].",
        "{name} says hello and [hopes you are feeling better|wants to know if you still have the {noun}].",
        "I'll be at {place} from {clock}[ if you want to meet up|, so just text me when you arrive].",
        "The [plumber|electrician|builder] [came round|finally turned up] and [fixed the {noun}|said it "
        "will cost {price}].",
        "I hope your {relative} is [doing well|feeling better|enjoying {city}].",
        "[Sorry for the short notice|Apologies for the late reply], it's been a busy week.",
        "We still have {small_num} tickets left[ if anyone would like them].",
    ],
    "messages_close": [
        "[Best wishes|Thanks|See you soon|Speak soon|Love|Cheers], {hero}",
        "[Talk soon|Take care|Have a good week]!",
        "Thanks in advance, {hero}",
    ],
    "title": ["Mr", "Mrs", "Ms", "Dr"],
    "purpose": [
        "say thank you for {weekday}",
        "ask if you still need the {noun}",
        "let you know I got home safely",
        "check you are still coming on {weekday}",
        "say happy birthday",
        "send you the address for {weekday}",
    ],
    "announcement": [
        "the bins are collected on {weekday} this week",
        "the office will be closed on {weekday}",
        "the {event} starts at {clock}",
        "there is cake in the kitchen",
        "the car park will be closed for resurfacing",
        "the book club meets at {place} on {weekday}",
        "the school trip to {city} has been cancelled",
        "parking permits must be renewed by the end of {month}",
    ],
    "late_reason": [
        "the train is delayed",
        "I had to go back for my keys",
        "the traffic is terrible",
        "the bus never came",
        "I got stuck at work",
        "the dog ran off in the park",
    ],
    **general_extract.RULES,
}

_NAMES = ("narration", "dialogue", "instructions", "news", "messages")

REGISTER = RegisterSpec(
    name="general",
    grammar=Grammar(RULES, SLOTS, BINDINGS),
    categories=(
        CategorySpec("general/narration", "narration_open", "narration_body", (4, 7), "narration_close"),
        CategorySpec("general/dialogue", "dialogue_open", "dialogue_body", (4, 8)),
        CategorySpec("general/instructions", "instructions_open", "instructions_body", (4, 7), ordered=True),
        CategorySpec("general/news", "news_open", "news_body", (3, 6)),
        CategorySpec("general/messages", "messages_open", "messages_body", (3, 6), "messages_close"),
        # A passage, then its main points repeated from it (general_extract). Added after the first bundled
        # models: drawn in the second stage, so the documents of the five above stay what they were.
        CategorySpec(general_extract.NAME, "extract_open", "extract_body", (2, 2), added=True, quotes=True),
    ),
    bind=bind,
)
