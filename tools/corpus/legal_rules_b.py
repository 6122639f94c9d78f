"""Legal-register grammar rules, second half: confidentiality, liability, payment, warranties, boilerplate.

Split from ``legal.py`` only to keep modules readable; ``legal.RULES`` merges these after its own, so the
rule order (and with it every generated document) is unchanged.
"""

from __future__ import annotations

RULES_B: dict[str, list[str]] = {
    # --- confidentiality ---------------------------------------------------------------------------
    "confidentiality_open": [
        "Each party undertakes that it shall not at any time [during {agr}, and for a period of "
        "{duration} after termination or expiry of {agr},|during the Term or at any time after its "
        "termination or expiry,] disclose to any person any confidential information concerning the "
        "business, affairs, customers, clients or suppliers of the other party[ or of any member of "
        "the group of companies to which the other party belongs], except as permitted by {own_ref}.",
        "{pa} shall keep [strictly |]confidential all Confidential Information of {pb} and shall not "
        "use any such Confidential Information except for the purpose of [performing its obligations "
        "under|exercising its rights under] {agr}.",
        "No party shall use any other party's confidential information for any purpose other than to "
        "exercise its rights and perform its obligations under or in connection with {agr}.",
        "Each party shall keep confidential the terms of {agr} and all Confidential Information "
        "disclosed to it by the other party[ in connection with {agr}]{proviso_opt}.",
        "Each party may disclose the other party's Confidential Information: {disclosure_list}.",
    ],
    "confidentiality_body": [
        "Each party may disclose the other party's Confidential Information: {disclosure_list}.",
        "The obligations in this Clause {cl} shall not apply to any Confidential Information which: "
        "{ci_exception_list}.",
        "Each party shall ensure that its employees, officers, representatives, contractors, "
        "subcontractors or advisers to whom it discloses the other party's Confidential Information "
        "comply with this Clause {cl}.",
        "On termination or expiry of {agr}, {pa} shall [promptly |]return or destroy all documents "
        "and materials (and any copies) containing, reflecting, incorporating or based on {pb}'s "
        "Confidential Information[ and shall certify in writing to {pb} that it has done so].",
        "{pa} shall notify {pb} [immediately|promptly|without undue delay] if it becomes aware of any "
        "unauthorised use or disclosure of {pb}'s Confidential Information.",
        "The provisions of this Clause {cl} shall continue to apply notwithstanding the termination "
        "or expiry of {agr}[ for a period of {duration}| without limit in time].",
        "{pa} acknowledges that damages alone would not be an adequate remedy for breach of this "
        "Clause {cl} and that {pb} shall be entitled to the remedies of injunction, specific "
        "performance and other equitable relief for any threatened or actual breach of this Clause "
        "{cl}.",
        "All Confidential Information shall remain the property of the disclosing party, and no "
        "licence or other right in respect of Confidential Information is granted by {agr}.",
        "Neither party shall make, or permit any person to make, any public announcement concerning "
        "{agr} without the prior written consent of the other party[ (such consent not to be "
        "unreasonably withheld or delayed)], except as required by law, any governmental or "
        "regulatory authority, any court or other authority of competent jurisdiction.",
        "{pa} shall apply the same degree of care to protect {pb}'s Confidential Information as it "
        "uses to protect its own confidential information of a similar nature, and in any event no "
        "less than a reasonable degree of care.",
        "{pa} shall not copy or reproduce any Confidential Information of {pb} except as strictly "
        "necessary for the purposes of {agr}.",
        "{lead}{pa} shall not disclose any Confidential Information of {pb} to any third party "
        "without {consent}.",
    ],
    "disclosure_item": [
        "to its employees, officers, representatives, contractors, subcontractors or advisers who "
        "need to know such information for the purposes of exercising the party's rights or carrying "
        "out its obligations under or in connection with {agr}",
        "as may be required by law, a court of competent jurisdiction or any governmental or "
        "regulatory authority",
        "to its insurers, auditors and professional advisers on a confidential basis",
        "with the prior written consent of the disclosing party",
    ],
    "ci_exception": [
        "is or becomes generally available to the public other than as a result of a breach of {agr}",
        "was available to the receiving party on a non-confidential basis before disclosure by the "
        "disclosing party",
        "was, is or becomes available to the receiving party on a non-confidential basis from a "
        "person who, to the receiving party's knowledge, is not bound by a confidentiality agreement "
        "with the disclosing party",
        "the parties agree in writing is not confidential or may be disclosed",
        "is developed by or for the receiving party independently of the information disclosed by the "
        "disclosing party",
    ],
    # --- limitation of liability -------------------------------------------------------------------
    "liability_open": [
        "Nothing in {agr} shall limit or exclude [either party's|a party's] liability for: {unlimited_list}.",
        "Subject to {cref}, neither party shall be liable to the other, whether in contract, tort "
        "(including negligence), breach of statutory duty, or otherwise, for any {csq_series} arising "
        "under or in connection with {agr}.",
        "Subject to {cref}, {pa}'s total liability to {pb}, whether in contract, tort (including "
        "negligence), breach of statutory duty, or otherwise, arising under or in connection with "
        "{agr} shall be limited to {cap}.",
        "Neither party excludes or limits liability to the other party for death or personal injury "
        "caused by its negligence, fraud or fraudulent misrepresentation[, or for any other liability "
        "which cannot be limited or excluded by Applicable Law].",
        "Except as expressly and specifically provided in {agr}, all warranties, conditions and other "
        "terms implied by statute or common law are, to the fullest extent permitted by law, excluded "
        "from {agr}.",
    ],
    "liability_body": [
        "Subject to {cref}, neither party shall be liable to the other, whether in contract, tort "
        "(including negligence), breach of statutory duty, or otherwise, for any {csq_series} arising "
        "under or in connection with {agr}.",
        "Subject to {cref}, {pa}'s total liability to {pb}, whether in contract, tort (including "
        "negligence), breach of statutory duty, or otherwise, arising under or in connection with "
        "{agr} shall be limited to {cap}.",
        "The terms implied by sections 13 to 15 of the Sale of Goods Act 1979[ and sections 3 to 5 of "
        "the Supply of Goods and Services Act 1982] are, to the fullest extent permitted by law, "
        "excluded from {agr}.",
        "{pa} shall not be liable for any failure or delay in performing its obligations under {agr} "
        "to the extent that such failure or delay is caused by {pb}'s failure to comply with its "
        "obligations under {agr}.",
        "Each party acknowledges that the limitations and exclusions of liability in this Clause {cl} "
        "are reasonable in the light of all the circumstances[ and have been taken into account in "
        "setting the Charges].",
        "{pa}'s liability under {cref} shall be reduced by the amount of any sums previously paid by "
        "{pa} in respect of claims arising under {agr}.",
        "Any claim under {agr} must be [brought|notified in writing] within {duration} of the date on "
        "which the claimant became aware, or ought reasonably to have become aware, of the facts "
        "giving rise to the claim[, failing which the claim shall be deemed to have been waived].",
        "Nothing in this Clause {cl} shall limit {cus}'s obligation to pay the Charges[ when due].",
        "References to liability in this Clause {cl} include every kind of liability arising under or "
        "in connection with {agr}, including liability in contract, tort (including negligence), "
        "misrepresentation, restitution or otherwise.",
        "{pa} shall not be liable to {pb} for any loss arising from [any information provided by "
        "{pb}|{pb}'s failure to back up its data|the use of {subj} otherwise than in accordance with "
        "the Documentation].",
        "Neither party shall be liable for any loss or damage which was not reasonably foreseeable at "
        "the date of {agr}.",
        "Nothing in {agr} shall limit or exclude [either party's|a party's] liability for: {unlimited_list}.",
        "{lead}the aggregate liability of each party under {agr} shall not exceed {cap}.",
    ],
    "cap": [
        "{amount}",
        "{amount}",
        "the total Charges paid [or payable |]by {cus} under {agr} in the [twelve (12) months|Contract "
        "Year] immediately preceding the date on which the claim arose",
        "{pct} of the total Charges paid in the Contract Year in which the breach occurred",
        "the greater of {amount} and {pct} of the Charges paid under {agr}",
    ],
    "csq_loss": [
        "loss of profits",
        "loss of sales or business",
        "loss of agreements or contracts",
        "loss of anticipated savings",
        "loss of use or corruption of software, data or information",
        "loss of or damage to goodwill",
        "indirect or consequential loss",
    ],
    "unlimited_item": [
        "death or personal injury caused by its negligence",
        "fraud or fraudulent misrepresentation",
        "breach of the terms implied by section 2 of the Supply of Goods and Services Act 1982",
        "any matter in respect of which it would be unlawful to exclude or restrict liability",
        "its liability under the indemnities in {cref}",
        "wilful default or wilful misconduct",
    ],
    # --- payment -----------------------------------------------------------------------------------
    "payment_open": [
        "In consideration of the provision of {subj}, {cus} shall pay {sup} the Charges [in "
        "accordance with this Clause {cl}|as set out in {sched}].",
        "{sup} shall invoice {cus} [monthly in arrears|quarterly in advance|on completion of each "
        "Milestone|on or at any time after {date}|on delivery of {subj}][ for the Charges due in "
        "respect of that period].",
        "{cus} shall pay each [valid |]invoice submitted by {sup} within {duration} of the date of the "
        "invoice[ in full and in cleared funds][ to a bank account nominated in writing by {sup}].",
        "The Charges for {subj} shall be {amount}[, payable in {instalments} equal instalments][ as "
        "set out in {sched}].",
        "All amounts payable by {cus} under {agr} are exclusive of amounts in respect of value added "
        "tax chargeable from time to time (VAT).",
    ],
    "payment_body": [
        "Where any taxable supply for VAT purposes is made under {agr} by {sup} to {cus}, {cus} shall, "
        "on receipt of a valid VAT invoice from {sup}, pay to {sup} such additional amounts in respect "
        "of VAT as are chargeable on the supply of {subj} at the same time as payment is due for the "
        "supply of {subj}.",
        "If {cus} fails to make a payment due to {sup} under {agr} by the due date, then, without "
        "limiting {sup}'s remedies under {cref}, {cus} shall pay interest on the overdue sum from the "
        "due date until payment of the overdue sum, whether before or after judgment.",
        "Interest under this Clause {cl} will accrue each day at {pct} a year above the [Bank of "
        "England's base rate|base rate of the central bank of {law}] from time to time.",
        "{cus} shall pay all amounts due under {agr} in full without any set-off, counterclaim, "
        "deduction or withholding (other than any deduction or withholding of tax as required by "
        "law).",
        "{sup} may, without limiting any other rights or remedies it may have, set off any amount "
        "owed to it by {cus} against any amount payable by {sup} to {cus}.",
        "The Charges shall [remain fixed for the Initial Term|be reviewed annually on each anniversary "
        "of the Effective Date][ and may not be increased by more than {pct} in any Contract Year].",
        "If {cus} disputes any invoice, {cus} shall [immediately |]notify {sup} in writing[ within "
        "{duration} of receipt of the invoice], setting out the reasons for the dispute in reasonable "
        "detail[, and shall pay the undisputed portion of the invoice in accordance with this Clause "
        "{cl}].",
        "{cus} shall reimburse {sup} for all reasonable [travel and subsistence |]expenses properly "
        "incurred in connection with {subj}, subject to [the production of receipts or other evidence "
        "as required by {cus}|{cus}'s prior written approval of any expense exceeding {amount}].",
        "Time for payment shall [be|not be] of the essence of {agr}.",
        "{cus} shall pay a deposit of {pct} of the total Charges on signature of {agr}, and the balance "
        "[on completion|within {duration} of delivery of {subj}].",
        "All payments under {agr} shall be made in {cur_name} by electronic transfer to [the bank "
        "account specified in {sched}|such bank account as {sup} may nominate in writing].",
        "{sup} shall not be entitled to any payment in respect of {subj} which have not been provided "
        "in accordance with {agr}.",
        "{cus} shall pay each [valid |]invoice submitted by {sup} within {duration} of the date of the "
        "invoice[ in full and in cleared funds].",
        "{lead}the Charges shall include every cost and expense of {sup} directly or indirectly "
        "incurred in connection with the performance of {agr}.",
    ],
    "instalments": ["two", "three", "four", "six", "twelve"],
    # --- warranties --------------------------------------------------------------------------------
    "warranties_open": [
        "{sup} warrants to {cus} that {subj} shall: {warranty_list}.",
        "{sup} warrants and represents that, on delivery and for a period of {duration} from the date "
        "of delivery, {subj} shall: {warranty_list}.",
        "Each party warrants and represents that: {rep_list}.",
        "{sup} warrants that {subj} will be provided using reasonable care and skill[ and in "
        "accordance with [Good Industry Practice|the Specification|Good Industry Practice and the "
        "Specification]].",
        "{sup} warrants that it has and will continue to have all necessary licences, consents and "
        "permissions necessary for the performance of its obligations under {agr}.",
    ],
    "warranties_body": [
        "If {subj} do not conform with the warranty set out in {cref}, {sup} shall, at its option, "
        "[repair or replace|re-perform] the non-conforming {subj_bare} or refund the price of them in "
        "full[, provided that {cus} gives notice in writing to {sup} within {duration} of discovery "
        "that some or all of {subj} do not comply with the warranty].",
        "{sup} shall not be liable for the failure of {subj} to comply with the warranty set out in "
        "{cref} if: {warranty_excl_list}.",
        "Except as set out in this Clause {cl}, {sup} gives no warranty and makes no representation in "
        "relation to {subj}.",
        "The warranty in {own_ref} shall apply for {duration} from the date of [delivery|acceptance|"
        "installation] of {subj}.",
        "{sup} does not warrant that {cus}'s use of {subj} will be uninterrupted or error-free[, or "
        "that {subj} will meet {cus}'s requirements].",
        "The warranties in this Clause {cl} are given on the Effective Date and shall be deemed to be "
        "repeated on each day during the Term by reference to the facts and circumstances then "
        "existing.",
        "{cus} acknowledges that, in entering into {agr}, it has not relied on any statement, "
        "representation, assurance or warranty (whether made innocently or negligently) that is not "
        "set out in {agr}.",
        "{sup} warrants that the receipt and use of {subj} by {cus} shall not infringe the rights, "
        "including any Intellectual Property Rights, of any third party.",
        "The provisions of this Clause {cl} shall apply to any repaired or replacement {subj_bare} "
        "supplied by {sup}.",
        "{sup} shall remedy any breach of warranty notified under this Clause {cl} [within {duration}|"
        "as soon as reasonably practicable] [at its own cost|free of charge].",
        "Each party warrants and represents that: {rep_list}.",
        "{lead}{sup} warrants that {subj} shall conform in all material respects with the Specification.",
    ],
    "warranty_item": [
        "conform in all material respects with their description and the Specification",
        "be free from material defects in design, material and workmanship",
        "be of satisfactory quality (within the meaning of the Sale of Goods Act 1979)",
        "be fit for any purpose held out by {sup}",
        "comply with all applicable statutory and regulatory requirements",
    ],
    "rep_item": [
        "it has full capacity and authority to enter into and to perform {agr}",
        "{agr} is executed by its duly authorised representative",
        "there are no actions, suits or proceedings pending or, to its knowledge, threatened against "
        "it that might affect its ability to meet its obligations under {agr}",
        "it has obtained and shall maintain all consents, licences and permissions required to enter "
        "into and perform {agr}",
        "it is not aware of any circumstances which would prevent it from performing its obligations "
        "under {agr}",
    ],
    "warranty_excl": [
        "{cus} makes any further use of {subj} after giving notice under {cref}",
        "the defect arises because {cus} failed to follow {sup}'s oral or written instructions as to "
        "the storage, installation, use and maintenance of {subj}",
        "the defect arises as a result of {sup} following any drawing, design or specification "
        "supplied by {cus}",
        "{cus} alters or repairs {subj} without the written consent of {sup}",
        "the defect arises as a result of fair wear and tear, wilful damage, negligence, or abnormal "
        "storage or working conditions",
    ],
    # --- boilerplate: force majeure, assignment, notices, entire agreement and the rest ------------
    "boilerplate_open": [
        "Neither party shall be in breach of {agr} nor liable for delay in performing, or failure to "
        "perform, any of its obligations under {agr} if such delay or failure results from events, "
        "circumstances or causes beyond its reasonable control[, including {fm_series}].",
        "{pa} shall not assign, transfer, mortgage, charge, subcontract, declare a trust over or deal "
        "in any other manner with any or all of its rights and obligations under {agr} without "
        "{consent}.",
        "Any notice given to a party under or in connection with {agr} shall be in writing and shall "
        "be delivered by hand or by pre-paid first-class post or other next working day delivery "
        "service at its registered office[, or sent by email to the address specified in {sched}].",
        "{agr} constitutes the entire agreement between the parties and supersedes and extinguishes "
        "all previous agreements, promises, assurances, warranties, representations and "
        "understandings between them, whether written or oral, relating to its subject matter.",
        "No variation of {agr} shall be effective unless it is in writing and signed by the parties "
        "(or their authorised representatives).",
        "If any provision or part-provision of {agr} is or becomes invalid, illegal or unenforceable, "
        "it shall be deemed modified to the minimum extent necessary to make it valid, legal and "
        "enforceable.",
    ],
    "boilerplate_body": [
        "If the period of delay or non-performance continues for {duration}, the party not affected "
        "may terminate {agr} by giving {duration} written notice to the affected party.",
        "The affected party shall [promptly |]notify the other party in writing of the nature and "
        "extent of the Force Majeure Event and shall use all reasonable endeavours to mitigate its "
        "effect.",
        "{pa} may at any time assign, mortgage, charge, subcontract, delegate, declare a trust over "
        "or deal in any other manner with any or all of its rights under {agr}[ to any member of its "
        "Group].",
        "Any notice shall be deemed to have been received: {notice_list}.",
        "This Clause {cl} does not apply to the service of any proceedings or other documents in any "
        "legal action or, where applicable, any other method of dispute resolution.",
        "A waiver of any right or remedy under {agr} or by law is only effective if given in writing "
        "and shall not be deemed a waiver of any subsequent right or remedy.",
        "A failure or delay by a party to exercise any right or remedy provided under {agr} or by law "
        "shall not constitute a waiver of that or any other right or remedy, nor shall it prevent or "
        "restrict any further exercise of that or any other right or remedy.",
        "If such modification is not possible, the relevant provision or part-provision shall be "
        "deemed deleted, and any modification to or deletion of a provision or part-provision under "
        "this Clause {cl} shall not affect the validity and enforceability of the rest of {agr}.",
        "Unless it expressly states otherwise, {agr} does not give rise to any rights under the "
        "Contracts (Rights of Third Parties) Act 1999 to enforce any term of {agr}.",
        "Nothing in {agr} is intended to, or shall be deemed to, establish any partnership or joint "
        "venture between any of the parties, constitute any party the agent of another party, or "
        "authorise any party to make or enter into any commitments for or on behalf of any other "
        "party.",
        "{agr} may be executed in any number of counterparts, each of which when executed shall "
        "constitute a duplicate original, but all the counterparts together shall constitute the one "
        "agreement.",
        "Each party shall, at the request of the other party, promptly execute and deliver such "
        "documents and perform such acts as may reasonably be required for the purpose of giving full "
        "effect to {agr}.",
        "Notices to {sup} shall be marked for the attention of {person} at {address}[, or such other "
        "address as {sup} may notify to {cus} in writing].",
        "Each party acknowledges that in entering into {agr} it does not rely on, and shall have no "
        "remedies in respect of, any statement, representation, assurance or warranty that is not set "
        "out in {agr}.",
        "{agr} constitutes the entire agreement between the parties and supersedes and extinguishes "
        "all previous agreements between them relating to its subject matter.",
    ],
    "fm_cause": [
        "acts of God, flood, drought, earthquake or other natural disaster",
        "epidemic or pandemic",
        "terrorist attack, civil war, civil commotion or riots, war, threat of or preparation for war",
        "nuclear, chemical or biological contamination",
        "any law or any action taken by a government or public authority",
        "collapse of buildings, fire, explosion or accident",
        "any labour or trade dispute, strikes, industrial action or lockouts",
        "interruption or failure of utility service",
    ],
    "notice_item": [
        "if delivered by hand, at the time the notice is left at the proper address",
        "if sent by pre-paid first-class post or other next working day delivery service, at 9.00 am "
        "on the second Business Day after posting",
        "if sent by email, at the time of transmission, or, if this time falls outside business "
        "hours in the place of receipt, when business hours resume",
    ],
}
