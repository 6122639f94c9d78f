"""Everyday vocabulary for the general register.

Entries are grammar templates, so they may refer to the document's bindings (``{his}``) or to other
rules. The lists are long on purpose: everyday text draws on a wide vocabulary, which keeps its
next-word entropy well above the legal register's.
"""

from __future__ import annotations

NOUNS = (
    "umbrella", "bicycle", "kettle", "notebook", "lantern", "suitcase", "teapot", "radio", "camera",
    "blanket", "ladder", "map", "envelope", "key", "wallet", "jacket", "scarf", "basket", "bucket",
    "hammer", "violin", "clock", "mirror", "chair", "lamp", "candle", "box", "jar of honey",
    "loaf of bread", "bag of apples", "sandwich", "letter", "parcel", "photograph", "postcard",
    "painting", "kite", "football", "jigsaw puzzle", "board game", "cookbook", "novel", "dictionary",
    "watering can", "toolbox", "wheelbarrow", "tent", "sleeping bag", "torch", "compass", "backpack",
    "rope", "bottle of water", "flask", "laptop", "phone charger", "pair of headphones", "keyboard",
    "printer", "desk", "sofa", "rug", "plant pot", "vase", "mug", "plate", "frying pan", "saucepan",
    "recipe", "shopping list", "ticket", "passport", "receipt", "coat", "pair of boots", "hat",
    "glove", "ring", "necklace", "watch", "bracelet", "fishing rod", "paintbrush", "sewing machine",
    "typewriter", "record player", "telescope", "birdcage", "doll's house", "toy train",
    "skateboard", "helmet", "raincoat", "picnic blanket", "thermometer", "calendar", "diary",
    "newspaper", "magazine", "guidebook", "chess set", "deck of cards", "spade", "rake",
    "lawnmower", "garden hose", "doormat", "teddy bear", "pillow", "duvet", "towel", "toothbrush",
    "hairbrush", "alarm clock", "stool", "bookcase", "cupboard", "drawer", "window box", "bird feeder",
    "shoebox", "biscuit tin", "cake tin", "jam jar", "wooden spoon", "whisk", "rolling pin",
    "tea towel", "ironing board", "washing line", "bicycle pump", "padlock", "spare tyre",
    "road map", "harmonica", "ukulele", "sketchbook", "pencil case", "school bag", "lunchbox",
    "snow globe", "music box", "pocket knife", "magnifying glass", "globe", "trophy", "medal",
    "accordion", "anchor", "apron", "armchair", "badge", "balloon", "bandage", "banjo", "barrel",
    "bath mat", "battery", "beach towel", "bench", "blender", "bookmark", "bottle opener", "bowl",
    "brooch", "broom", "bucket hat", "button", "cabinet", "candlestick", "cardigan", "carpet",
    "cassette", "chalkboard", "chandelier", "clipboard", "coat hanger", "coffee pot", "colander",
    "cushion", "deckchair", "dressing gown", "drum", "dustpan", "egg timer", "extension lead",
    "fan", "fence post", "filing cabinet", "fire extinguisher", "flag", "flowerpot", "fountain pen",
    "frame", "fruit bowl", "gate", "gift box", "guitar case", "hammock", "handbag", "hat box",
    "hearing aid", "hockey stick", "hot water bottle", "ice scraper", "jumper", "kettle lid",
    "lampshade", "lantern battery", "lawn chair", "lunch tray", "mailbox", "marble", "mattress",
    "measuring jug", "microscope", "mop", "napkin", "nutcracker", "oven glove", "paddle",
    "paperweight", "parasol", "pen knife", "pepper mill", "piggy bank", "pincushion", "pitchfork",
    "postbox", "projector", "quilt", "raft", "recorder", "rocking chair", "rucksack", "saddle",
    "salt shaker", "scooter", "screwdriver", "shawl", "shovel", "sieve", "sledge", "slipper",
    "spinning top", "stepladder", "stopwatch", "sun hat", "tablecloth", "tape measure",
    "tea tray", "tennis racket", "thimble", "tin opener", "toaster", "tool belt", "trowel",
    "trunk", "tripod", "umbrella stand", "walking stick", "wardrobe", "weather vane", "wheel",
    "wind chime", "wine glass", "wool hat", "xylophone", "yo-yo", "zip",
)  # fmt: skip

ADJECTIVES = (
    "old", "new", "small", "large", "heavy", "light", "blue", "red", "green", "yellow", "battered",
    "shiny", "dusty", "wooden", "broken", "tiny", "enormous", "borrowed", "brand-new",
    "second-hand", "antique", "folded", "crumpled", "muddy", "wet", "warm", "cold", "strange",
    "familiar", "plain", "striped", "spotted", "bright", "faded", "rusty", "polished", "chipped",
    "cracked", "painted", "lopsided", "handmade", "expensive", "cheap", "elegant", "ugly",
    "beautiful", "ordinary", "mysterious", "forgotten", "favourite", "spare", "empty", "full",
    "leather", "silver", "golden", "plastic", "orange", "purple", "grey", "pink", "black", "white",
    "tall", "narrow", "round", "square", "soft", "noisy", "quiet", "sticky", "fragile",
)  # fmt: skip

PLACES = (
    "the library", "the bakery", "the train station", "the harbour", "the market square",
    "the post office", "the park", "the school gates", "the bus stop", "the swimming pool",
    "the hardware shop", "the café on the corner", "the museum", "the town hall", "the allotments",
    "the beach", "the riverbank", "the old mill", "the hospital", "the community centre",
    "the garden centre", "the cinema", "the supermarket", "the bridge", "the cathedral",
    "the car park", "the football ground", "the village green", "the church hall", "the bookshop",
    "the launderette", "the petrol station", "the playground", "the canal path", "the pier",
    "the sports centre", "the pub on the corner", "the chemist", "the dentist's", "the vet's",
    "the town square", "the bus station", "the ferry terminal", "the leisure centre",
    "the fish market", "the flower shop", "the butcher's", "the greengrocer's", "the skate park",
    "the bowling alley", "the ice rink", "the art gallery", "the old lighthouse", "the boatyard",
    "the antique shop", "the bandstand", "the barber's", "the bike shed", "the boating lake",
    "the botanical gardens", "the bottle bank", "the cricket pavilion", "the cycle path",
    "the delicatessen", "the fire station", "the fishmonger's", "the florist's", "the garage",
    "the health centre", "the hotel lobby", "the indoor market", "the junk shop", "the lido",
    "the marina", "the motorway services", "the newsagent's", "the nature reserve", "the orchard",
    "the police station", "the pottery studio", "the railway bridge", "the recycling centre",
    "the roundabout", "the sandwich bar", "the scout hut", "the seafront", "the shoe shop",
    "the station café", "the tennis courts", "the toy shop", "the train yard", "the viewpoint",
    "the water tower", "the youth club",
)  # fmt: skip

ANIMALS = (
    "a fox", "a cat", "a dog", "a heron", "a hedgehog", "a squirrel", "a robin", "a goat", "a horse",
    "an owl", "a rabbit", "a badger", "a seagull", "a crow", "a deer", "a blackbird", "a magpie",
    "a duck", "a swan", "a pigeon", "a ginger cat", "a small brown dog", "a sheepdog", "a donkey",
    "a pheasant", "a tortoise", "a parrot", "a goose", "a kitten", "a puppy", "a frog", "a mole",
)  # fmt: skip

FOODS = (
    "pancakes", "soup", "curry", "pasta", "roast potatoes", "apple pie", "scrambled eggs",
    "fresh bread", "vegetable stew", "grilled fish", "strawberries", "biscuits", "lemon cake",
    "chips", "rice and beans", "porridge", "fish and chips", "cheese sandwiches", "chocolate cake",
    "tomato soup", "pizza", "noodles", "lentil soup", "fruit salad", "toast and jam",
    "a chicken pie", "scones", "meatballs", "baked potatoes", "shepherd's pie", "dumplings",
    "flapjacks", "ice cream", "mushroom risotto", "sausages and mash", "carrot cake",
    "banana bread", "beef stew", "blueberry muffins", "cheese on toast", "chilli", "coleslaw",
    "crumpets", "egg fried rice", "falafel", "gingerbread", "hot chocolate", "jacket potatoes",
    "lasagne", "mince pies", "omelettes", "paella", "pea soup", "plum crumble", "potato salad",
    "rhubarb pie", "roast chicken", "samosas", "spaghetti", "stuffed peppers", "sushi", "tacos",
    "tomato salad", "trifle", "vegetable curry", "waffles",
)  # fmt: skip

JOBS = (
    "nurse", "teacher", "baker", "postal worker", "engineer", "gardener", "librarian", "mechanic",
    "carpenter", "chef", "bus driver", "photographer", "accountant", "fisherman", "vet",
    "electrician", "pharmacist", "journalist", "farmer", "plumber", "florist", "dentist",
    "designer", "musician", "shopkeeper", "taxi driver", "architect", "firefighter", "painter",
    "translator", "tailor", "beekeeper", "lifeguard", "park ranger", "bookseller", "doctor",
    "student", "retired teacher", "grandmother", "pilot", "barber", "builder", "butcher",
    "cleaner", "cook", "courier", "dancer", "decorator", "driving instructor", "estate agent",
    "fitness instructor", "glazier", "hairdresser", "lorry driver", "midwife", "optician",
    "paramedic", "porter", "potter", "receptionist", "roofer", "sailor", "scientist", "singer",
    "social worker", "surveyor", "swimming coach", "train driver", "waiter", "welder", "zookeeper",
)  # fmt: skip

FEELINGS = (
    "happy", "nervous", "relieved", "surprised", "tired", "curious", "proud", "embarrassed",
    "excited", "annoyed", "puzzled", "lonely", "grateful", "calm", "restless", "hopeful",
    "disappointed", "cheerful", "anxious", "delighted", "homesick", "confused", "content",
    "impatient", "amused", "worried", "brave", "sleepy", "thoughtful", "glad",
)  # fmt: skip

ACTIVITIES = (
    "bake a cake", "go for a long walk", "clean out the garage", "paint the fence",
    "visit {his} grandmother", "fix the leaking tap", "plant tomatoes in the garden",
    "write a letter to {friend}", "read the newspaper", "catch the early train to {city}",
    "repair the old {noun}", "take the dog to the vet", "sort out the attic", "learn to swim",
    "tidy the kitchen", "make a list", "go to {place}", "buy a new {noun}", "sell the {adj} {noun}",
    "wash the car", "walk along the beach", "cook {food}", "invite the neighbours round",
    "build a bird box", "mend the {noun}", "rearrange the furniture", "call {friend}",
    "sweep the yard", "pick blackberries", "climb the hill behind the house", "hang the washing out",
    "look for the {noun}", "ride a bike", "visit the museum", "change a light bulb",
    "put up some shelves", "water the plants", "pack for the holiday", "fly a kite",
    "bake bread", "go fishing", "feed the ducks",
)  # fmt: skip

PAST_ACTIVITIES = (
    "baked a cake", "went for a long walk", "cleaned out the garage", "painted the fence",
    "visited {his} grandmother", "fixed the leaking tap", "planted tomatoes in the garden",
    "wrote a letter to {friend}", "read the newspaper", "caught the early train to {city}",
    "repaired the old {noun}", "took the dog to the vet", "sorted out the attic",
    "tidied the kitchen", "made a list", "went to {place}", "bought a new {noun}",
    "sold the {adj} {noun}", "washed the car", "walked along the beach", "cooked {food}",
    "invited the neighbours round", "built a bird box", "mended the {noun}",
    "rearranged the furniture", "called {friend}", "swept the yard", "picked blackberries",
    "climbed the hill behind the house", "hung the washing out", "looked for the {noun}",
    "found {thing} behind the sofa", "dropped {thing} in a puddle", "lost {his} {noun}",
    "borrowed {thing} from {friend}", "wrapped {thing} in brown paper", "carried {thing} upstairs",
    "hid {thing} in the cupboard", "put {thing} in the car", "sat on the steps for a while",
    "made a cup of tea", "fed the ducks", "went fishing", "packed {his} bag",
    "fell asleep on the sofa", "watered the plants", "changed a light bulb", "put up some shelves",
    "flew a kite",
)  # fmt: skip

TIMES = (
    "early one morning", "late in the evening", "just after lunch", "a little before midnight",
    "the first day of spring", "a cold Tuesday in {month}", "the middle of the night",
    "the last day of the holidays", "nearly dark", "a bright Saturday morning",
    "the week before Christmas", "a wet afternoon in {month}", "half past six", "almost noon",
    "a Sunday in {month}", "the morning after the storm", "the hottest day of the year",
    "the evening of the {ordinal} of {month}", "a quiet Monday", "still early",
)  # fmt: skip

WEATHER = (
    "the rain had not stopped for hours", "a cold wind was blowing in from the sea",
    "the sun was shining for the first time in a week", "snow was beginning to settle on the roofs",
    "the sky had turned a strange shade of yellow", "fog hung low over the fields",
    "the puddles had frozen overnight", "it was warm enough to sit in the garden",
    "thunder rumbled somewhere over the hills", "the leaves were turning red and gold",
    "a light drizzle was falling", "the street was white with frost", "the air smelled of cut grass",
    "the wind was rattling the windows", "it was the kind of grey day that never quite gets light",
    "the clouds were racing across the sky",
)  # fmt: skip

RELATIVES = (
    "grandmother", "grandfather", "aunt", "uncle", "sister", "brother", "cousin", "mother",
    "father", "neighbour", "best friend", "godmother", "nephew", "niece", "flatmate",
)  # fmt: skip

TOPICS = (
    "the old days", "{his} plans for the summer", "football", "the price of {food}", "the weather",
    "their favourite films", "the new bridge", "where to go on holiday", "{town} as it used to be",
    "their first jobs", "the garden", "music", "books they had read", "the neighbours",
    "learning to drive", "school", "{city}", "nothing in particular", "the future",
    "the best way to cook {food}", "dogs and cats", "what to do with the {adj} {noun}",
)  # fmt: skip

CITIES = (
    "London", "Manchester", "Edinburgh", "Glasgow", "Cardiff", "Bristol", "Leeds", "York", "Dublin",
    "Belfast", "Paris", "Lisbon", "Madrid", "Rome", "Berlin", "Amsterdam", "Copenhagen", "Vienna",
    "Prague", "Oslo", "Brighton", "Liverpool", "Oxford", "Cambridge", "Bath", "Newcastle",
)  # fmt: skip

SPANS = (
    "five minutes", "ten minutes", "fifteen minutes", "twenty minutes", "half an hour",
    "an hour", "two hours", "a couple of minutes", "forty minutes", "a few seconds",
)  # fmt: skip

VERBS_PAST = (
    "found", "fixed", "painted", "carried", "dropped", "borrowed", "sold", "bought", "cleaned",
    "wrapped", "hid", "opened", "lost", "repaired", "polished", "measured", "photographed",
    "packed", "unpacked", "delivered", "returned", "collected", "dusted", "moved", "weighed",
    "examined", "sketched", "counted", "folded", "posted", "emptied", "filled", "washed", "dried",
    "mended", "sorted", "labelled", "stacked", "picked up", "put away", "took down", "brought back",
    "left behind", "gave away", "threw out", "fetched", "noticed", "admired", "tested",
    "sharpened", "decorated", "replaced", "rescued", "swapped", "shared", "tried out", "described",
    "inspected", "unwrapped", "hung up", "locked away", "dug up", "carved", "glued", "painted over",
    "wiped", "hoovered", "rearranged", "chose", "ordered", "won", "kept", "forgot", "discovered",
)  # fmt: skip

VERBS_INTRANSITIVE = (
    "waited", "laughed", "arrived", "sat down", "stopped", "listened", "walked home", "went out",
    "stayed inside", "hurried", "slept", "wandered off", "sang", "whistled", "sighed", "shouted",
    "complained", "disappeared", "turned back", "looked around", "got lost", "gave up", "set off",
    "came back", "ran", "hid", "smiled", "hesitated", "knocked", "called out", "fell silent",
    "stood still", "cheered", "argued", "apologised", "worked hard", "overslept", "woke up early",
)  # fmt: skip

ADJUNCTS = (
    "in the garden", "by the back door", "on the way to {place}", "after breakfast",
    "before anyone else woke up", "without saying a word", "for the first time in years",
    "with great care", "in a hurry", "at the end of the day", "under the kitchen table",
    "next to the {noun}", "while the kettle boiled", "in the pouring rain", "just in time",
    "as quietly as possible", "behind {place}", "in {city}", "on {weekday} morning",
    "outside {place}", "in the attic", "at the bottom of the garden", "on the kitchen table",
    "halfway up the stairs", "in the middle of the road", "at the last minute", "for no reason",
    "by mistake", "on purpose", "in the dark", "after lunch", "before the shops closed",
    "near the old {noun}", "at the edge of town", "on the top shelf", "in the back of the car",
    "with {friend}", "on {his} own", "for {his} {relative}", "at {clock}", "late at night",
    "in front of everyone", "across the street", "by the river", "in the shed",
)  # fmt: skip

SUBJECTS = (
    "{hero}", "{he}", "{friend}", "{his} {relative}", "the {job}", "a {job} from {other_town}",
    "the woman next door", "the man from the shop", "one of the children", "everybody", "nobody",
    "a stranger", "the twins", "{name}", "{full_name}",
)  # fmt: skip

CONNECTIVES = (
    "and", "but", "so", "while", "because", "until", "although", "before", "after", "when", "and then",
)  # fmt: skip

OPENERS = (
    "Then", "Later", "Meanwhile", "Afterwards", "Suddenly", "Luckily", "Of course", "Strangely",
    "Unfortunately", "At first", "In the end", "Just then", "Eventually", "By then",
)  # fmt: skip

GROUPS = (
    "Volunteers", "Local children", "Shop owners", "Council workers", "Residents", "Pupils from the "
    "primary school", "Members of the rowing club", "A group of students", "Staff at the hospital",
    "Neighbours", "Firefighters", "Members of the choir",
)  # fmt: skip

GROUP_ACTIVITIES = (
    "clearing litter", "painting benches", "planting bulbs", "collecting donations", "repairing "
    "fences", "selling cakes", "decorating the streets", "building a new playground", "sorting "
    "books", "cleaning the canal", "putting up posters", "rehearsing for the show",
)  # fmt: skip

ADVERBS = (
    "quietly", "slowly", "carefully", "suddenly", "eventually", "finally", "happily", "nervously",
    "proudly", "secretly", "quickly", "gently", "reluctantly", "cheerfully", "patiently", "hastily",
    "politely", "clumsily", "calmly", "almost",
)  # fmt: skip

IMPERATIVES = (
    "clean", "check", "remove", "replace", "measure", "tighten", "loosen", "rinse", "dry", "wipe",
    "fold", "cut", "trim", "stir", "heat", "cool", "fill", "empty", "lift", "lower", "turn",
    "hold", "press", "open", "close", "cover", "uncover", "label", "store", "sand", "paint",
    "polish", "mark", "test", "sort", "unscrew", "attach", "detach", "line up", "weigh",
)  # fmt: skip
