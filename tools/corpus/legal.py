"""The legal register: commercial-contract clauses in the stock phrasing real contracts use.

Ten sub-categories of clauses (definitions, obligations, indemnity, termination, governing law,
confidentiality, liability, payment, warranties, and the boilerplate of force majeure, assignment, notices
and the like), and two whose text copies its input: ``legal/redline`` revises a quoted clause
(:mod:`corpus.legal_redline`) and ``legal/review`` quotes a clause in two drafts and says what changed
(:mod:`corpus.legal_review`). Those two were added later and enter the training draw in its second stage
(:mod:`corpus.generate`). The phrasing is deliberately formulaic: the same stock phrases ("shall
indemnify, defend and hold harmless ... from and against any and all losses ...", "with immediate effect
by giving written notice to the other party if") recur across templates and documents, as they do in real
contracts. That regularity is what lets a draft distilled on this register predict it well, while a
general-purpose draft, which has never seen the phrases, does not. Variety comes from the slots (parties,
sums, periods, clause references, laws) and the optional provisos and lettered lists, so the text cannot be
memorised sentence by sentence.
"""

from __future__ import annotations

from corpus import legal_redline, legal_review, slots
from corpus.grammar import Expansion, Grammar, SlotFn
from corpus.legal_rules_b import RULES_B
from corpus.spec import CategorySpec, RegisterSpec

# (supplier-side role, customer-side role): the defined terms the parties go by in one contract.
_ROLES = (
    ("Supplier", "Customer"), ("Supplier", "Customer"), ("Supplier", "Customer"),
    ("Licensor", "Licensee"), ("Service Provider", "Client"), ("Contractor", "Employer"),
    ("Seller", "Buyer"), ("Consultant", "Company"), ("Vendor", "Purchaser"),
    ("Provider", "Customer"), ("Distributor", "Principal"), ("Processor", "Controller"),
)  # fmt: skip
# Plural defined terms only, so "the Services are" / "they conform" agree everywhere.
_SUBJECTS = ("Services", "Services", "Goods", "Deliverables", "Products", "Works", "Licensed Materials")
# (law, courts, city, arbitral institution, seat)
_LAWS = (
    ("England and Wales", "the courts of England and Wales", "London",
     "the London Court of International Arbitration", "London, England"),
    ("England and Wales", "the courts of England and Wales", "London",
     "the International Chamber of Commerce", "London"),
    ("Scotland", "the Scottish courts", "Edinburgh", "the Scottish Arbitration Centre", "Edinburgh"),
    ("Ireland", "the courts of Ireland", "Dublin", "the International Chamber of Commerce", "Dublin"),
    ("the State of New York", "the state and federal courts located in the Borough of Manhattan",
     "New York", "the American Arbitration Association", "New York, New York"),
    ("the State of Delaware", "the state and federal courts located in the State of Delaware",
     "Wilmington", "the American Arbitration Association", "Wilmington, Delaware"),
    ("Singapore", "the courts of Singapore", "Singapore",
     "the Singapore International Arbitration Centre", "Singapore"),
    ("the Province of Ontario", "the courts of the Province of Ontario", "Toronto",
     "the ADR Institute of Canada", "Toronto, Ontario"),
    ("New South Wales", "the courts of New South Wales", "Sydney",
     "the Australian Centre for International Commercial Arbitration", "Sydney"),
    ("Hong Kong", "the courts of Hong Kong", "Hong Kong",
     "the Hong Kong International Arbitration Centre", "Hong Kong"),
)  # fmt: skip
_CURRENCIES = (("£", "pounds sterling"), ("£", "pounds"), ("$", "US dollars"), ("EUR ", "euros"))

BINDINGS = (
    "sup", "cus", "pa", "pb", "sup_role", "cus_role", "agr", "subj",
    "subj_bare", "law", "courts", "city", "arb", "seat", "cur_symbol", "cur_name", "cl",
    *legal_redline.BINDINGS, *legal_review.BINDINGS,
)  # fmt: skip


# Clauses that bind either party alike; in the others the obligor is always the supplier side.
_MUTUAL = frozenset({"legal/confidentiality", "legal/termination", "legal/liability", "legal/boilerplate"})


def bind(exp: Expansion, category: str, *, particulars: bool = True) -> None:
    """Fix the parties, subject matter, law, currency and clause number of one contract.

    ``pa`` is the party a clause binds and ``pb`` the other: the supplier side, except that in mutual
    clauses (confidentiality, termination, ...) it is the customer side three times in ten.
    ``particulars`` False quotes a redline's clause without the deal's particulars
    (:func:`corpus.legal_redline.bind`).
    """
    rng = exp.rng
    sup_role, cus_role = rng.choice(_ROLES)
    exp.bind("sup_role", sup_role)
    exp.bind("cus_role", cus_role)
    exp.bind("sup", f"the {sup_role}")
    exp.bind("cus", f"the {cus_role}")
    pa, pb = (f"the {sup_role}", f"the {cus_role}")
    # Drawn for every category so that all documents consume the random stream alike.
    if rng.random() < 0.3 and category in _MUTUAL:
        pa, pb = pb, pa
    exp.bind("pa", pa)
    exp.bind("pb", pb)
    exp.bind("agr", "this Contract" if rng.random() < 0.12 else "this Agreement")
    subject = rng.choice(_SUBJECTS)
    exp.bind("subj_bare", subject)
    exp.bind("subj", f"the {subject}")
    law, courts, city, arb, seat = rng.choice(_LAWS)
    for name, value in (("law", law), ("courts", courts), ("city", city), ("arb", arb), ("seat", seat)):
        exp.bind(name, value)
    symbol, currency = rng.choice(_CURRENCIES)
    exp.bind("cur_symbol", symbol)
    exp.bind("cur_name", currency)
    exp.bind("cl", str(rng.randint(2, 24)))
    if category == legal_redline.NAME:  # after every other draw, so the other categories' streams stay
        legal_redline.bind(exp, particulars=particulars)
    elif category == legal_review.NAME:
        legal_review.bind(exp)


def _list(rule: str, conjunction: str, low: int = 2, high: int = 4) -> SlotFn:
    return lambda exp: slots.lettered_list(exp, rule, conjunction, low, high)


def _series(rule: str, conjunction: str, low: int, high: int) -> SlotFn:
    return lambda exp: slots.series(slots.pick_in_order(exp, rule, low, high), conjunction)


SLOTS: dict[str, SlotFn] = {
    "duration": lambda exp: slots.legal_duration(exp.rng),
    "amount": slots.amount,
    "pct": lambda exp: slots.percent(exp.rng),
    "cref": lambda exp: slots.clause_ref(exp.rng),
    "sched": lambda exp: slots.schedule_ref(exp.rng),
    "date": lambda exp: slots.date(exp.rng),
    "address": lambda exp: slots.address(exp.rng),
    "person": lambda exp: slots.person(exp.rng),
    # Each party's company name appears once per contract (in its definition), so it need not be bound.
    "sup_name": lambda exp: slots.company(exp.rng),
    "cus_name": lambda exp: slots.company(exp.rng),
    "company_no": lambda exp: f"{exp.rng.randint(1_000_000, 14_999_999):08d}",
    "own_ref": lambda exp: f"Clause {exp.bindings['cl']}.{exp.rng.randint(1, 6)}",
    "term_event_list": _list("term_event", "or", 2, 4),
    "on_term_list": _list("on_term", "and"),
    "claim_list": _list("claim_step", "and", 3, 5),
    "ip_remedy_list": _list("ip_remedy", "or", 2, 4),
    "oblig_list": _list("oblig_item", "and", 3, 5),
    "remedy_list": _list("remedy_item", "and", 2, 4),
    "disclosure_list": _list("disclosure_item", "and", 2, 3),
    "ci_exception_list": _list("ci_exception", "or", 3, 5),
    "unlimited_list": _list("unlimited_item", "or", 3, 5),
    "warranty_list": _list("warranty_item", "and", 3, 5),
    "rep_list": _list("rep_item", "and", 2, 4),
    "warranty_excl_list": _list("warranty_excl", "or", 2, 4),
    "notice_list": _list("notice_item", "and", 2, 3),
    "ci_series": _series("ci_kind", "and", 2, 4),
    "csq_series": _series("csq_loss", "or", 3, 6),
    "fm_series": _series("fm_cause", "or", 2, 5),
}

RULES: dict[str, list[str]] = {
    # --- shared phrases ----------------------------------------------------------------------------
    "lead": [
        "Subject to {cref}, ",
        "Save as otherwise provided in {agr}, ",
        "Without prejudice to {cref}, ",
        "Notwithstanding {cref}, ",
        "Except as expressly set out in {agr}, ",
        "With effect from the Effective Date, ",
        "During the Term, ",
        "Subject to the terms and conditions of {agr}, ",
    ],
    "lead_opt": ["", "", "{lead}"],
    "standard": [
        "Good Industry Practice",
        "Good Industry Practice",
        "all Applicable Laws",
        "the Specification",
        "the Service Levels",
        "the terms of {agr}",
        "the reasonable instructions of {cus}",
        "all applicable laws and regulations",
        "the Documentation",
    ],
    "endeavours": [
        "use all reasonable endeavours",
        "use its reasonable endeavours",
        "use its best endeavours",
        "use commercially reasonable efforts",
        "take all reasonable steps",
    ],
    "consent": [
        "the prior written consent of {pb}",
        "the prior written consent of {pb} (such consent not to be unreasonably withheld or delayed)",
        "the prior written consent of {pb} (such consent not to be unreasonably withheld, "
        "conditioned or delayed)",
    ],
    "proviso": [
        ", provided that {proviso_body}",
        ", provided always that {proviso_body}",
        ", save that {proviso_body}",
        ", except to the extent that {exception_body}",
    ],
    "proviso_opt": ["", "", "{proviso}"],
    "proviso_body": [
        "{pb} has given {pa} reasonable prior written notice of such requirement",
        "such consent shall not be unreasonably withheld, conditioned or delayed",
        "nothing in this Clause shall oblige {pa} to act in breach of Applicable Law",
        "any such change is first agreed in writing between the parties",
        "the total amount payable under this Clause shall not exceed {amount}",
        "{pa} shall remain fully responsible for the performance of its obligations under {agr}",
        "{pa} shall give {pb} not less than {duration} written notice",
        "such obligation shall not apply to any information already in the public domain",
    ],
    "exception_body": [
        "such failure is caused by the act or omission of {pb}",
        "{pb} has failed to comply with its obligations under {cref}",
        "the same is caused by the negligence or wilful default of {pb}",
        "{pa} is prevented from doing so by a Force Majeure Event",
        "Applicable Law requires otherwise",
    ],
    "losses": [
        "losses, damages, liabilities, costs and expenses (including reasonable legal fees)",
        "losses, damages, liabilities, costs and expenses (including reasonable legal fees)",
        "losses, damages, liabilities, costs and expenses (including reasonable legal fees)",
        "losses, liabilities, damages, costs, claims, demands and expenses (including reasonable "
        "legal and professional fees)",
        "Losses",
        "losses, damages, liabilities, claims, costs and expenses (including reasonable legal fees "
        "and disbursements)",
    ],
    "arising": [
        "arising out of or in connection with",
        "arising out of or in connection with",
        "arising under or in connection with",
        "resulting from or arising out of",
    ],
    "personnel": [
        "its employees, agents and subcontractors",
        "its officers, employees, agents and subcontractors",
        "its Representatives",
        "its personnel",
    ],
    "survive": [
        "shall survive termination or expiry of {agr}",
        "shall survive the termination or expiry of {agr} for any reason",
        "shall continue in force notwithstanding the termination or expiry of {agr}",
    ],
    "materials": [
        "Confidential Information",
        "documents and materials",
        "equipment and materials",
        "Customer Materials",
        "records and Deliverables",
    ],
    # --- definitions -------------------------------------------------------------------------------
    "definitions_open": [
        "In {agr}, unless the context otherwise requires, the following definitions apply.",
        "In {agr}, unless the context otherwise requires, the following words and expressions shall "
        "have the following meanings.",
        "The definitions and rules of interpretation in this Clause apply in {agr}.",
        "In {agr} the following terms shall have the meanings set out below, unless the context "
        "requires otherwise.",
        "Capitalised terms used but not defined in {agr} shall have the meanings given to them in {sched}.",
        "The following definitions apply in {agr}[ and in each Schedule to it].",
        "{definition}",
        "{definition}",
        "{definition}",
    ],
    "definitions_body": ["{definition}"] * 12
    + [
        "A reference to a statute or statutory provision is a reference to it as amended, extended or "
        "re-enacted from time to time.",
        "Unless the context otherwise requires, words in the singular shall include the plural and "
        "in the plural shall include the singular.",
        "A reference to writing or written includes email[ but not fax].",
        "Clause, Schedule and paragraph headings shall not affect the interpretation of {agr}.",
        "Any words following the terms including, include, in particular, for example or any similar "
        "expression shall be construed as illustrative and shall not limit the sense of the words "
        "preceding those terms.",
        "A reference to a party includes its personal representatives, successors and permitted assigns.",
        "A reference to a company shall include any company, corporation or other body corporate, "
        "wherever and however incorporated or established.",
        "The Schedules form part of {agr} and shall have effect as if set out in full in the body of "
        "{agr}, and any reference to {agr} includes the Schedules.",
        "If there is an inconsistency between any of the provisions in the main body of {agr} and the "
        "Schedules, the provisions in the main body of {agr} shall prevail.",
    ],
    "definition": [
        '"Affiliate" means, in relation to a party, any entity that directly or indirectly controls, '
        "is controlled by, or is under common control with that party[ from time to time].",
        '"Applicable Law" means all laws, statutes, regulations and codes from time to time in force '
        "[in {law}|which apply to the performance of {agr}].",
        '"Business Day" means a day other than a Saturday, Sunday or public holiday in {law}, when '
        "banks in {city} are open for business.",
        '"Charges" means the charges payable by {cus} for the supply of {subj} in accordance with '
        "[{cref}|{sched}].",
        '"Commencement Date" means [{date}|the date on which {agr} is signed by both parties|the date '
        "set out in {sched}].",
        '"Effective Date" means [{date}|the date of {agr}|the date on which {agr} is signed by the last '
        "party to sign it].",
        '"Confidential Information" means all confidential information (however recorded or preserved) '
        "disclosed by a party or its Representatives to the other party and that party's "
        "Representatives in connection with {agr}[, including {ci_series}].",
        '"Control" has the meaning given in section 1124 of the Corporation Taxes Act 2010, and the '
        "expression change of Control shall be construed accordingly.",
        '"Data Protection Legislation" means all applicable data protection and privacy legislation '
        "in force from time to time[ in {law}][, including the UK GDPR].",
        '"Deliverables" means all documents, products and materials developed by {sup} or its agents, '
        "contractors and employees as part of or in relation to {subj} in any form or media[, "
        "including drawings, maps, plans, diagrams, designs, pictures, computer programs, data, "
        "specifications and reports].",
        '"Force Majeure Event" has the meaning given to it in {cref}.',
        '"Good Industry Practice" means the exercise of that degree of skill, care, prudence, '
        "efficiency, foresight and timeliness as would be expected from a leading company within the "
        "relevant industry or business sector.",
        '"Insolvency Event" means, in relation to a party, that party suspending or threatening to '
        "suspend payment of its debts, being unable to pay its debts as they fall due, or having an "
        "administrator, receiver or liquidator appointed over any of its assets.",
        '"Intellectual Property Rights" means patents, rights to inventions, copyright and related '
        "rights, trade marks, business names and domain names, rights in designs, rights in computer "
        "software, database rights, rights to use and protect the confidentiality of confidential "
        "information[ (including know-how and trade secrets)], and all other intellectual property "
        "rights, in each case whether registered or unregistered, and all similar or equivalent "
        "rights or forms of protection which subsist now or in the future in any part of the world.",
        '"Losses" means all losses, liabilities, damages, costs, claims, charges, demands, actions, '
        "proceedings and expenses (including reasonable legal and professional fees).",
        '"Personal Data" has the meaning given to it in the Data Protection Legislation.',
        '"Representatives" means, in relation to a party, its employees, officers, [contractors, '
        "subcontractors, |]representatives and advisers.",
        '"Services" means the services to be provided by {sup} under {agr} as set out in {sched}[, '
        "together with any other services which {sup} provides or agrees to provide to {cus}].",
        '"Specification" means the [description|specification] of {subj} set out or referred to in '
        "{sched}[, as amended from time to time in accordance with {cref}].",
        '"Term" means the period of {duration} commencing on the [Effective Date|Commencement Date][, '
        "unless terminated earlier in accordance with {agr}].",
        '"Territory" means [the United Kingdom|the European Economic Area|the United States of '
        "America|the whole world|{law}].",
        '"Key Personnel" means the individuals identified as such in {sched}[, or any replacement '
        "approved by {cus} in accordance with {cref}].",
        '"Milestone" means an event or task described in the Implementation Plan which must be '
        "completed by the relevant Milestone Date.",
        '"Service Levels" means the service levels set out in {sched}[, as amended from time to time '
        "in accordance with {cref}].",
        '"Third Party Claim" means any claim, action or demand brought against a party by a person '
        "who is not a party to {agr}.",
        '"Year" means each period of twelve (12) months commencing on the Effective Date or on any '
        "anniversary of it.",
        '"Premises" means the premises at {address}[ or such other premises as the parties may agree '
        "in writing].",
        '"Group" means, in relation to a company, that company, any subsidiary or holding company from '
        "time to time of that company, and any subsidiary from time to time of a holding company of "
        "that company.",
        "\"Order\" means {cus}'s order for {subj}, as set out in {cus}'s purchase order form[ or in "
        "{cus}'s written acceptance of {sup}'s quotation].",
        '"Documentation" means the user manuals, technical manuals and other documents relating to '
        "{subj} supplied by {sup} to {cus}.",
        '"Acceptance Tests" means the tests to be carried out on {subj} to determine whether they '
        "conform to the Specification, as described in {sched}.",
        '"Default Interest Rate" means {pct} per annum above the base rate of [the Bank of England|'
        "the central bank of {law}] from time to time.",
        '"{sup_role}" means {sup_name}, a company incorporated in {law}[ under company number '
        "{company_no}][, whose registered office is at {address}].",
        '"{cus_role}" means {cus_name}, a company incorporated in {law}[ under company number '
        "{company_no}][, whose registered office is at {address}].",
        '"Customer Materials" means all documents, information, items and materials in any form, '
        "whether owned by {cus} or a third party, which are provided by {cus} to {sup} in connection "
        "with {subj}.",
        '"Authorised Users" means those employees, agents and independent contractors of {cus} who '
        "are authorised by {cus} to use {subj}[ and the Documentation].",
        '"Virus" means any thing or device (including any software, code, file or programme) which '
        "may prevent, impair or otherwise adversely affect the operation of any computer software, "
        "hardware or network.",
        '"Subcontractor" means any person engaged by {sup} to provide any part of {subj}[ with the '
        "prior written consent of {cus}].",
        '"Dispute" means any dispute, controversy or claim arising out of or in connection with {agr}, '
        "including any question regarding its existence, validity or termination.",
        '"Contract Year" means a period of twelve (12) months commencing on the Effective Date or any '
        "anniversary of the Effective Date during the Term.",
    ],
    "ci_kind": [
        "the existence and terms of {agr}",
        "information relating to the business, affairs, customers, clients or suppliers of either party",
        "any know-how, trade secrets, processes and techniques",
        "any information developed by the parties in the course of carrying out {agr}",
        "any Personal Data",
    ],
    # --- obligations -------------------------------------------------------------------------------
    "obligations_open": [
        "{lead_opt}{sup} shall provide {subj} to {cus} in accordance with {standard}{proviso_opt}.",
        "{lead_opt}{sup} shall perform its obligations under {agr} in accordance with {standard} and "
        "{standard}{proviso_opt}.",
        "{sup} shall {endeavours} to meet any performance dates for {subj} specified in {sched}, but "
        "any such dates shall be estimates only and time shall not be of the essence for the "
        "performance of {subj}.",
        "In performing its obligations under {agr}, {sup} shall: {oblig_list}.",
        "{sup} shall at all times comply with [all Applicable Laws|the Service Levels|{cref}] and shall "
        "[promptly|immediately] notify {cus} in writing of any [breach|anticipated breach] of this "
        "Clause {cl}.",
        "{sup} shall not, without {consent}, {prohibited}.",
        "{lead_opt}{sup} shall deliver {subj} to {cus} [at the Premises|to the address specified in "
        "{sched}|at such location as the parties may agree in writing] [on {date}|within {duration} "
        "of the Effective Date|in accordance with the Implementation Plan].",
        "{cus} shall provide {sup} with such [information|assistance|co-operation|access to its premises] "
        "as {sup} may reasonably require in order to [perform its obligations under {agr}|provide "
        "{subj}]{proviso_opt}.",
    ],
    "obligations_body": [
        "{sup} shall ensure that all {personnel} engaged in the provision of {subj} are suitably "
        "skilled, qualified and experienced to perform the tasks assigned to them.",
        "{sup} shall remain responsible for all acts and omissions of its subcontractors as if they "
        "were its own.",
        "If {sup} fails to perform {subj} in accordance with {agr}, {cus} may, without prejudice to its "
        "other rights and remedies, do any one or more of the following: {remedy_list}.",
        "{sup} shall maintain complete and accurate records in respect of {subj} [for a period of "
        "{duration} after termination of {agr}|during the Term and for {duration} afterwards].",
        "{sup} shall appoint a [suitably qualified|senior] representative who shall have authority to "
        "act on its behalf in all matters relating to {agr}.",
        "Time shall be of the essence in relation to [the delivery of {subj}|the Milestone Dates|the "
        "performance of {sup}'s obligations under {cref}].",
        "{sup} shall comply with all [reasonable |]policies and procedures of {cus} notified to it in "
        "writing from time to time, including [the security policy|the health and safety policy|the "
        "anti-bribery policy|the data protection policy][ set out in {sched}].",
        "{sup} shall not subcontract any of its obligations under {agr} without {consent}{proviso_opt}.",
        "Each party shall bear its own costs and expenses incurred in connection with the "
        "negotiation, preparation and execution of {agr}.",
        "{cus} acknowledges that it is relying on the skill and judgement of {sup} in the provision "
        "of {subj}.",
        "{sup} shall [promptly|without undue delay] notify {cus} in writing of any matter which is "
        "likely to delay or prevent the performance of its obligations under {agr}.",
        "{sup} shall {endeavours} to [complete|perform] {subj} [within {duration} of the Effective "
        "Date|by {date}|in a timely manner] and in any event in accordance with {standard}.",
        "{sup} shall obtain and maintain all licences, permissions and consents which may be required "
        "for the provision of {subj}[ before the date on which {subj} are to start].",
        "{sup} shall co-operate with {cus} in all matters relating to {subj}[ and shall attend such "
        "meetings as {cus} may reasonably request].",
        "Any change to the scope of {subj} shall be agreed in writing in accordance with the change "
        "control procedure set out in {sched}.",
        "{lead}{sup} shall not be required to perform any obligation under {agr} to the extent that "
        "its performance is prevented by {cus}'s failure to comply with {cref}.",
    ],
    "prohibited": [
        "subcontract or delegate any of its obligations under {agr}",
        "make any material change to {subj}",
        "use the name or trade marks of {cus} in any publicity material",
        "engage any Key Personnel in the provision of any services to a competitor of {cus}",
        "remove any equipment or materials from the Premises",
        "enter into any agreement or arrangement on behalf of {cus}",
    ],
    "oblig_item": [
        "co-operate with {cus} in all matters relating to {subj}",
        "perform {subj} with the best care, skill and diligence in accordance with {standard}",
        "use personnel who are suitably skilled and experienced to perform the tasks assigned to them",
        "ensure that {subj} conform with all descriptions and specifications set out in {sched}",
        "provide all equipment, tools and vehicles necessary to provide {subj}",
        "comply with all Applicable Laws and obtain and maintain all necessary licences and consents",
        "observe all health and safety rules and regulations and any other reasonable security "
        "requirements that apply at the Premises",
        "notify {cus} in writing as soon as it becomes aware of any delay in the performance of {subj}",
    ],
    "remedy_item": [
        "terminate {agr} with immediate effect by giving written notice to {sup}",
        "refuse to accept any subsequent performance of {subj} which {sup} attempts to make",
        "recover from {sup} any costs incurred by {cus} in obtaining substitute services from a third party",
        "require a refund from {sup} of any sums paid in advance for {subj} that {sup} has not provided",
        "claim damages for any additional costs, loss or expenses incurred by {cus} which are in any "
        "way attributable to {sup}'s failure to carry out its obligations under {agr}",
    ],
    # --- indemnity ---------------------------------------------------------------------------------
    "indemnity_open": [
        "{lead_opt}{sup} shall indemnify, defend and hold harmless {cus}[ and its Affiliates][, and "
        "their respective officers, directors and employees,] from and against any and all {losses} "
        "{arising} {ind_trigger}.",
        "{lead_opt}{sup} shall indemnify, defend and hold harmless {cus} from and against any and all "
        "{losses} {arising} {ind_trigger}.",
        "{lead_opt}{sup} shall indemnify {cus} against all {losses} suffered or incurred by {cus} "
        "[arising out of or in connection with|as a result of] {ind_trigger}.",
        "{lead_opt}{sup} shall [fully |]indemnify and keep indemnified {cus} from and against any and all "
        "{losses} which {cus} may suffer or incur as a result of {ind_trigger}.",
        "{sup} shall indemnify {cus} in full against any and all {losses} {arising} {ind_trigger}, "
        "except to the extent that such {losses} arise from {ind_exclusion}.",
        "{sup} shall defend, indemnify and hold harmless {cus} against {losses} {arising} any Third "
        "Party Claim [alleging|to the extent that it alleges] that {subj} infringe the Intellectual "
        "Property Rights of a third party.",
    ],
    "indemnity_body": [
        "If any third party makes a claim, or notifies an intention to make a claim, against {cus} "
        "which may reasonably be considered likely to give rise to a liability under this indemnity, "
        "{cus} shall: {claim_list}.",
        "The indemnity in {cref} shall not apply to the extent that a claim arises from {ind_exclusion}.",
        "{cus} shall [promptly |]notify {sup} in writing of any Third Party Claim[ within {duration} of "
        "becoming aware of it], and shall not make any admission of liability, agreement or "
        "compromise in relation to the claim without the prior written consent of {sup}.",
        "{sup} shall have sole conduct of the defence and settlement of any Third Party Claim{proviso_opt}.",
        "{cus} shall take all reasonable steps to mitigate any {losses} in respect of which it makes a "
        "claim under this Clause {cl}.",
        "The indemnities in this Clause {cl} are [without prejudice to|in addition to] any other "
        "rights or remedies [available to {cus}|that {cus} may have] [at law or in equity|under {agr}].",
        "This Clause {cl} {survive}.",
        "If {subj} are, or in {sup}'s opinion are likely to become, the subject of a claim of "
        "infringement, {sup} may, at its own expense and option: {ip_remedy_list}.",
        "Nothing in this Clause {cl} shall restrict or limit {cus}'s general obligation at law to "
        "mitigate a loss which it may suffer or incur as a result of an event that may give rise to a "
        "claim under this indemnity.",
        "{sup}'s total liability under this indemnity shall [not exceed|be limited to] {amount}[ in "
        "aggregate][ in any Contract Year].",
        "{cus} shall give {sup} such [reasonable |]assistance[, at {sup}'s cost,] as it may reasonably "
        "request in connection with the defence of any such claim.",
        "Neither party shall be entitled to recover under this indemnity more than once in respect "
        "of the same loss.",
        "{sup} shall maintain in force, with a reputable insurance company, [professional indemnity|"
        "public liability|product liability] insurance [in an amount not less than|with a limit of at "
        "least] {amount} [per claim|in aggregate] to cover the liabilities that may arise under or in "
        "connection with {agr}.",
        "{sup} shall, on request, produce to {cus} both the insurance certificate giving details of "
        "cover and the receipt for the current year's premium in respect of each insurance.",
        "{lead}{sup} shall indemnify {cus} against all {losses} {arising} {ind_trigger}.",
    ],
    "ind_trigger": [
        "any breach by {sup} of {cref}",
        "any breach of {agr} by {sup}[, its employees, agents or subcontractors]",
        "any claim made against {cus} for actual or alleged infringement of a third party's "
        "Intellectual Property Rights [in connection with|arising out of] the receipt or use of {subj}",
        "any negligent act or omission of {sup} or {personnel} in [performing its obligations under|"
        "connection with] {agr}",
        "any claim brought against {cus} by a third party [arising out of the supply of {subj}|in "
        "connection with the performance of {agr}]",
        "the death of or personal injury to any person caused by the negligence of {sup}",
        "any breach of the Data Protection Legislation by {sup}[ or its Subcontractors]",
        "any fraud, wilful misconduct or wilful default of {sup}[ or its Representatives]",
        "any defect in {subj}[ supplied by {sup}]",
        "any failure by {sup} to comply with Applicable Law",
        "any claim by any of {sup}'s personnel relating to their employment or engagement",
    ],
    "ind_exclusion": [
        "the negligence or wilful default of {cus}",
        "any modification of {subj} by {cus} without {sup}'s prior written consent",
        "{cus}'s use of {subj} in combination with any item not supplied by {sup}",
        "compliance with any design, specification or instruction provided by {cus}",
        "{cus}'s breach of {agr}",
    ],
    "claim_step": [
        "as soon as reasonably practicable, give written notice of the claim to {sup}, specifying the "
        "nature of the claim in reasonable detail",
        "not make any admission of liability, agreement or compromise in relation to the claim "
        "without the prior written consent of {sup}",
        "give {sup} and its professional advisers access at reasonable times to its premises and its "
        "officers, directors, employees, agents, representatives or advisers",
        "take such action as {sup} may reasonably request to avoid, dispute, compromise or defend the claim",
        "allow {sup} to conduct all negotiations and proceedings relating to the claim",
    ],
    "ip_remedy": [
        "procure the right for {cus} to continue using {subj}",
        "modify {subj} so that they cease to be infringing",
        "replace {subj} with non-infringing items of equivalent functionality",
        "terminate {agr} immediately by notice in writing to {cus} and refund any of the Charges paid "
        "by {cus} as at the date of termination",
    ],
    # --- termination -------------------------------------------------------------------------------
    "termination_open": [
        "Either party may terminate {agr} with immediate effect by giving written notice to the other "
        "party if: {term_event_list}.",
        "Without affecting any other right or remedy available to it, either party may terminate "
        "{agr} with immediate effect by giving written notice to the other party if: "
        "{term_event_list}.",
        "Without affecting any other right or remedy available to it, either party may terminate "
        "{agr} with immediate effect by giving written notice to the other party if {term_event}.",
        "{agr} shall commence on the Effective Date and shall continue [for the Term|for a period of "
        "{duration}][, unless terminated earlier in accordance with this Clause {cl}].",
        "{agr} shall commence on the Effective Date and shall automatically renew for successive "
        "periods of {duration} unless either party gives the other not less than {duration} written "
        "notice of termination[ before the end of the then current term].",
        "{pa} may terminate {agr} [at any time |for convenience |]by giving {pb} not less than "
        "{duration} written notice.",
    ],
    "termination_body": [
        "On termination or expiry of {agr} for any reason: {on_term_list}.",
        "Termination or expiry of {agr} shall not affect any rights, remedies, obligations or "
        "liabilities of the parties that have accrued up to the date of termination or expiry, "
        "including the right to claim damages in respect of any breach of {agr} which existed at or "
        "before the date of termination or expiry.",
        "Any provision of {agr} that expressly or by implication is intended to come into or continue "
        "in force on or after termination or expiry of {agr} shall remain in full force and effect.",
        "{pa} may suspend [the supply of {subj}|performance of its obligations under {agr}] if {pb} "
        "fails to pay any amount due under {agr} on the due date for payment[ and such amount remains "
        "unpaid for {duration}].",
        "Without limiting its other rights or remedies, {pa} may terminate {agr} with immediate "
        "effect by giving written notice to {pb} if {pb} fails to pay any amount due under {agr} on "
        "the due date for payment and remains in default not less than {duration} after being "
        "notified in writing to make such payment.",
        "For the purposes of {own_ref}, a breach shall be considered capable of remedy if the party in "
        "breach can comply with the provision in question in all respects other than as to the time "
        "of performance.",
        "Within {duration} of the date of termination, {pb} shall return to {pa} all {materials} in "
        "its possession or control.",
        "Either party may terminate {agr} by giving written notice to the other party if a Force "
        "Majeure Event prevents the other party from performing its obligations for a continuous "
        "period of more than {duration}.",
        "{pa} may terminate {agr} with immediate effect by giving written notice to {pb} if there is a "
        "change of Control of {pb}.",
        "Termination of {agr} shall be without prejudice to {cref}.",
        "Either party may terminate {agr} with immediate effect by giving written notice to the other "
        "party if {term_event}.",
        "Upon termination of {agr}, {cus} shall pay to {sup} all of {sup}'s outstanding unpaid "
        "invoices and interest and, in respect of {subj} supplied but for which no invoice has been "
        "submitted, {sup} may submit an invoice, which shall be payable immediately on receipt.",
        "{lead}{pa} shall have no further obligation to provide {subj} after the date of termination.",
    ],
    "term_event": [
        "the other party commits a material breach of any term of {agr} which is irremediable or (if "
        "such breach is remediable) fails to remedy that breach within a period of {duration} after "
        "being notified in writing to do so",
        "the other party suspends, or threatens to suspend, payment of its debts or is unable to pay "
        "its debts as they fall due or admits inability to pay its debts",
        "the other party commences negotiations with all or any class of its creditors with a view to "
        "rescheduling any of its debts, or makes a proposal for or enters into any compromise or "
        "arrangement with its creditors",
        "an administrator, receiver or administrative receiver is appointed over all or any part of "
        "the assets of the other party",
        "the other party suspends or ceases, or threatens to suspend or cease, carrying on all or a "
        "substantial part of its business",
        "the other party repeatedly breaches any of the terms of {agr} in such a manner as to "
        "reasonably justify the opinion that its conduct is inconsistent with it having the "
        "intention or ability to give effect to the terms of {agr}",
        "an order is made or a resolution is passed for the winding up of the other party[, other "
        "than for the sole purpose of a solvent amalgamation or reconstruction]",
        "the other party suffers an Insolvency Event",
    ],
    "on_term": [
        "{cus} shall immediately pay to {sup} all of {sup}'s outstanding unpaid invoices and interest",
        "each party shall return or destroy all Confidential Information of the other party in its "
        "possession",
        "{cus} shall return all of {sup}'s equipment and materials[ within {duration}]",
        "all licences granted under {agr} shall immediately terminate",
        "the accrued rights and remedies of the parties as at termination shall not be affected",
        "Clauses which expressly or by implication survive termination shall continue in full force "
        "and effect",
    ],
    # --- governing law and jurisdiction ------------------------------------------------------------
    "governing_law_open": [
        "{agr} and any dispute or claim (including non-contractual disputes or claims) arising out of "
        "or in connection with it or its subject matter or formation shall be governed by and "
        "construed in accordance with the law of {law}.",
        "{agr} and any dispute or claim (including non-contractual disputes or claims) arising out of "
        "or in connection with it or its subject matter or formation shall be governed by and "
        "construed in accordance with the law of {law}.",
        "{agr} shall be governed by and construed in accordance with the laws of {law}[, without "
        "giving effect to any choice or conflict of law provision or rule].",
        "If a Dispute arises, the parties shall first attempt in good faith to resolve it by "
        "negotiation between their [senior executives|managing directors|respective representatives]"
        "[ within {duration} of either party notifying the other of the Dispute].",
        "Any dispute arising out of or in connection with {agr}, including any question regarding its "
        "existence, validity or termination, shall be referred to and finally resolved by "
        "arbitration under the Rules of {arb}, which Rules are deemed to be incorporated by reference "
        "into this Clause {cl}.",
    ],
    "governing_law_body": [
        "Each party irrevocably agrees that {courts} shall have [exclusive|non-exclusive] jurisdiction "
        "to settle any dispute or claim (including non-contractual disputes or claims) arising out of "
        "or in connection with {agr} or its subject matter or formation.",
        "Each party irrevocably agrees that {courts} shall have exclusive jurisdiction to settle any "
        "dispute or claim (including non-contractual disputes or claims) arising out of or in "
        "connection with {agr} or its subject matter or formation.",
        "The number of arbitrators shall be [one|three][, appointed in accordance with the Rules of {arb}].",
        "The seat, or legal place, of arbitration shall be {seat}.",
        "The language to be used in the arbitral proceedings shall be English.",
        "If the parties are unable to resolve the Dispute within {duration}, either party may refer "
        "the Dispute to [mediation|arbitration] in accordance with [{cref}|the rules of {arb}].",
        "Nothing in this Clause {cl} shall prevent either party from seeking [injunctive relief|an "
        "injunction or other equitable remedy] from any court of competent jurisdiction.",
        "Each party irrevocably waives any right that it may have to object to an action being "
        "brought in {courts}, to claim that the action has been brought in an inconvenient forum, or "
        "to claim that {courts} do not have jurisdiction.",
        "Each party irrevocably consents to any process in any legal action or proceedings arising "
        "out of or in connection with {agr} being served on it in accordance with the provisions of "
        "{agr} relating to service of notices.",
        "Pending the resolution of a Dispute, the parties shall continue to perform their respective "
        "obligations under {agr}.",
        "The parties agree that the United Nations Convention on Contracts for the International Sale "
        "of Goods shall not apply to {agr}.",
        "Each party waives, to the fullest extent permitted by Applicable Law, any right it may have "
        "to a trial by jury in respect of any litigation arising out of or in connection with {agr}.",
        "The costs of any mediation shall be borne equally by the parties, and each party shall bear "
        "its own costs[ of the mediation].",
        "Judgment on the award rendered by the arbitrators may be entered in any court having "
        "jurisdiction thereof.",
    ],
    **RULES_B,
    **legal_redline.RULES,
    **legal_review.RULES,
}

_NAMES = (
    "definitions", "obligations", "indemnity", "termination", "governing_law", "confidentiality",
    "liability", "payment", "warranties", "boilerplate",
)  # fmt: skip

REGISTER = RegisterSpec(
    name="legal",
    grammar=Grammar(RULES, SLOTS, BINDINGS),
    categories=(
        # ordered: sub-clauses follow the order the body rule lists them, as in a real contract.
        *(
            CategorySpec(f"legal/{name}", f"{name}_open", f"{name}_body", sentences=(3, 6), ordered=True)
            for name in _NAMES
        ),
        # The clause as it reads, then as amended (legal_redline). Added after the first bundled models:
        # drawn in the second stage, so the documents of the ten above stay what they were.
        CategorySpec(
            legal_redline.NAME,
            "redline_open",
            "redline_body",
            sentences=(2, 2),
            added=True,
            numbered=False,
            quotes=True,
        ),
        # A clause in two drafts, then a review that quotes it again and says what changed (legal_review).
        CategorySpec(
            legal_review.NAME,
            "review_open",
            "review_body",
            sentences=(3, 3),
            closing="review_close",
            added=True,
            numbered=False,
            quotes=True,
        ),
    ),
    bind=bind,
    # Most contract text carries clause numbers; a run of "7.1 ... 7.2 ..." is itself very predictable.
    numbering=0.6,
)
