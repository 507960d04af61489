"""Maya Okafor — product designer; Lisbon → Porto → Berlin; Studio Brisa → Northwind Logistics; cat Miso, then dog Biscuit.

Each entry: (id, date, text, extras). Written for this project; no outside text.
"""

SCOPE = "maya"

TRACES = [
    ("maya-intro", "2024-06-03", "My name is Maya Okafor. I'm a product designer and I live in Lisbon, in a small flat in Graça with far too many plants.", {"type": "semantic"}),
    ("maya-job-brisa", "2024-06-03", "I work at Studio Brisa, a twelve-person design agency near Cais do Sodré. Mostly app redesigns for banks and one very stubborn ferry company.", {"type": "semantic"}),
    ("maya-cat-miso", "2024-06-05", "My cat Miso knocked the monstera off the windowsill again. She is eight, orange, and has opinions about every plant I own.", {}),
    ("maya-allergy", "2024-06-09", "I'm allergic to penicillin. I found out as a kid after a rash that covered both arms, so any doctor needs to know before prescribing antibiotics.", {"type": "semantic", "confidence": 1.0}),
    ("maya-hayfever", "2024-06-12", "I take cetirizine every morning from May to July, otherwise the jacaranda pollen in Lisbon wipes me out.", {"type": "semantic"}),
    ("maya-coffee", "2024-06-14", "I prefer oat milk flat whites; dairy makes me feel heavy before long design reviews.", {"type": "semantic"}),
    ("maya-ferry-kickoff", "2024-06-18", "Kick-off with the ferry company. Their timetable page has forty-one links on mobile. We agreed to start with the ticket purchase flow and leave the loyalty programme for phase two.", {}),
    ("maya-sardines", "2024-06-13", "Santo António night in Alfama: grilled sardines, cheap vinho verde, and someone's grandmother teaching me to dance on a staircase. Best night of the year.", {"valence": 0.9, "arousal": 0.7}),
    ("maya-inv-20877", "2024-07-02", "Sent invoice INV-20877 to Casa Feliz Bakery for the menu board illustrations, 640 euros, due in 30 days.", {}),
    ("maya-landlord-lisbon", "2024-07-08", "The Lisbon landlord, Senhor Matos, wants to raise the rent by 18 percent in January. I told him I need to think about it.", {"valence": -0.4, "arousal": 0.5}),
    ("maya-review-feedback", "2024-07-11", "Design review went badly. The client's CTO called the new checkout 'too Scandinavian' and I had no idea what to do with that.", {"valence": -0.5, "arousal": 0.6}),
    ("maya-plants-note", "2024-07-15", "Plant care: the fiddle leaf wants the east window, the pothos can live anywhere, and the calathea is dramatic about tap water — use the filtered jug.", {"type": "procedural"}),
    ("maya-inv-20877-paid", "2024-07-29", "Casa Feliz paid invoice INV-20877 in full. Two days early, which never happens.", {"valence": 0.4}),
    ("maya-flight-madrid", "2024-08-05", "Booked flight TP1351 from Lisbon to Madrid on 19 September for the Config meetup. Seat 14A, leaves at 07:40 from terminal 1.", {}),
    ("maya-madrid-meetup", "2024-09-19", "At the Madrid design meetup I met Tomasz, who runs research at a logistics startup. He said they are always hiring designers who can read a spreadsheet.", {"valence": 0.5, "arousal": 0.4}),
    ("maya-journal-sept", "2024-09-23",
     "Sunday journal. The week started slowly: two days of tidying the ferry prototype and writing up test notes nobody will read. "
     "Miso has been eating less, so I booked her a check-up at the vet on Rua da Graça. "
     "On Thursday I finally fixed the bike's rear brake myself with a video and a borrowed hex key. "
     "Also, the dentist's office called to move my cleaning to 14 October at 9:30, which I must not forget. "
     "Weekend was mostly rain, a documentary about typefaces, and too much bread.", {}),
    ("maya-vet-miso", "2024-09-27", "The vet says Miso has a mild kidney issue, common for her age. New food, a blood test every six months, and she should be fine.", {"valence": -0.3, "arousal": 0.4}),
    ("maya-inv-20931", "2024-10-01", "Sent INV-20931 to Halvorsen & Brandt for the wayfinding sprint: 3,200 euros, net 45.", {}),
    ("maya-inv-20931-reminder", "2024-11-20", "Halvorsen & Brandt still haven't paid. Their accounts person, Ingrid, says the purchase order number was missing from the document and they need it reissued with PO 7716.", {"valence": -0.3, "arousal": 0.3}),
    ("maya-inv-20931-reissued", "2024-11-21", "Reissued the Halvorsen & Brandt invoice with PO 7716 on it. Same amount, new due date 5 January.", {}),
    ("maya-dentist", "2024-10-14", "Dentist cleaning done. No cavities, but she wants me to stop grinding my teeth at night and suggested a night guard.", {}),
    ("maya-rent-decision", "2024-11-02", "I decided to leave the Graça flat instead of paying the new rent. Porto is cheaper and half of Studio Brisa works remotely anyway.", {"type": "semantic", "valence": -0.1, "arousal": 0.5}),
    ("maya-porto-search", "2024-11-16", "Viewed three flats in Porto. The one in Bonfim has a balcony, a gas stove and a landlord with the unforgettable name Aurelio Vantongeren.", {}),
    ("maya-porto-lease", "2024-12-02", "Signed the lease for the Bonfim flat. Landlord Aurelio Vantongeren wants the deposit by bank transfer with reference BONF-3B.", {}),
    ("maya-christmas", "2024-12-25", "Christmas at my aunt's in Coimbra. Too much bacalhau, a fight about politics, and my cousin's baby fell asleep on me for two hours.", {"valence": 0.5, "arousal": 0.3}),
    ("maya-moved-porto", "2025-01-12", "I moved to Porto last weekend. The movers lost one box, of course the one with all my kitchen knives.", {"valence": -0.2, "arousal": 0.6}),
    ("maya-porto-first-week", "2025-01-19", "First week in Porto: it rains sideways, the francesinha is everything people promised, and Miso has claimed the balcony chair.", {"valence": 0.4, "arousal": 0.4}),
    ("maya-inv-20931-paid", "2025-01-08", "Halvorsen & Brandt finally paid the wayfinding sprint invoice. Three months late, but paid.", {"valence": 0.5}),
    ("maya-inv-21012", "2025-01-30", "Sent INV-21012 to the ferry company for phase one, 7,450 euros. Their finance team wants everything through a supplier portal called Coupa.", {}),
    ("maya-washer-order", "2025-02-03", "Ordered a washing machine for the Porto flat from Worten, order 5512-AX, delivery between 10 and 14 February.", {}),
    ("maya-washer-error", "2025-02-21", "The new washing machine stops mid-cycle and shows error E-4102. The manual says it's a drain pump blockage; I found a hair tie in the filter.", {"valence": -0.3, "arousal": 0.4}),
    ("maya-washer-error-again", "2025-03-04", "Washing machine threw E-4102 again even with a clean filter. Called Worten about order 5512-AX; a technician comes Friday morning.", {"valence": -0.5, "arousal": 0.5}),
    ("maya-washer-fixed", "2025-03-07", "Technician replaced the drain pump under warranty. He said the first one was a bad batch.", {"valence": 0.3}),
    ("maya-northwind-interview", "2025-02-12", "Interview with Northwind Logistics, Tomasz's company. A take-home task to redesign a driver's delivery-day screen. I liked them more than I expected.", {"valence": 0.4, "arousal": 0.6}),
    ("maya-northwind-offer", "2025-02-26", "Northwind Logistics made an offer: senior product designer, fully remote, better pay than Brisa. I accepted an offer I'd have laughed at a year ago.", {"valence": 0.8, "arousal": 0.7}),
    ("maya-leaving-brisa", "2025-03-14", "Last day at Studio Brisa. Joana made a cake shaped like the ferry's terrible timetable page. I cried a bit on the train home.", {"valence": 0.2, "arousal": 0.6}),
    ("maya-started-northwind", "2025-03-17", "I started working at Northwind Logistics today. Onboarding is a forty-page Notion doc and a very kind manager called Efua Mensah.", {"valence": 0.6, "arousal": 0.5}),
    ("maya-northwind-tools", "2025-03-20", "Northwind uses Linear for tickets, Figma for design, and a weekly demo on Thursdays at 16:00 Lisbon time where everyone shows unfinished work.", {"type": "semantic"}),
    ("maya-driver-research", "2025-04-02", "Rode along with a delivery driver in Gaia for a day. He keeps the app on the dashboard mount and only uses it with his thumb; anything above the middle of the screen is unreachable.", {}),
    ("maya-driver-research-2", "2025-04-09", "Second ride-along. Drivers hate the 'proof of delivery' photo step when it rains; the camera fogs up and the app times out after 20 seconds.", {}),
    ("maya-bluetooth-keyboard", "2025-04-11", "Bought a compact keyboard for the home office, SKU KB-M705-GRY, because the laptop keyboard was wrecking my wrists.", {}),
    ("maya-keyboard-return", "2025-04-28", "Returning the keyboard (KB-M705-GRY): the space bar squeaks. Return label printed, drop-off at the CTT post office.", {"valence": -0.2}),
    ("maya-adopt-biscuit", "2025-05-10", "I adopted a dog named Biscuit from the shelter in Matosinhos. Three-year-old beagle mix, terrified of bicycles, loves cheese.", {"valence": 0.9, "arousal": 0.8}),
    ("maya-biscuit-miso", "2025-05-14", "Biscuit and Miso are negotiating. Miso hisses, Biscuit lies down and sighs. I think Biscuit is winning by being boring.", {"valence": 0.5, "arousal": 0.3}),
    ("maya-biscuit-vet", "2025-05-20", "Biscuit's first vet visit: microchip registered, number 620098100445512, vaccines up to date, needs to lose a kilo.", {}),
    ("maya-biscuit-walks", "2025-06-02", "Walking Biscuit along the Douro at 7am is the best part of my day now. The fishermen know his name already.", {"valence": 0.8, "arousal": 0.3}),
    ("maya-layoff-rumor", "2025-06-11", "Rumours at Northwind that the Series B fell through and there will be layoffs. I couldn't sleep; kept refreshing Slack at 2am.", {"valence": -0.8, "arousal": 0.9}),
    ("maya-layoff-outcome", "2025-06-18", "Northwind cut 15 percent, mostly sales. Design was spared. Relief, and then guilt about being relieved.", {"valence": -0.2, "arousal": 0.6}),
    ("maya-burnout", "2025-06-27", "I've been running on empty for weeks. Today I sat in front of Figma for an hour and couldn't make a single decision. Took Friday off.", {"valence": -0.7, "arousal": 0.2}),
    ("maya-therapist", "2025-07-03", "First session with a therapist, Dr. Sofia Queirós, online on Wednesdays at 19:00. We talked mostly about saying no.", {"valence": 0.1, "arousal": 0.3}),
    ("maya-berlin-idea", "2025-07-08", "Efua asked if I'd consider moving to Berlin; Northwind is opening a small office there and wants a designer near the operations team.", {"valence": 0.3, "arousal": 0.6}),
    ("maya-berlin-decision", "2025-07-20", "I decided to take the Berlin move. A relocation package, a year's contract on an apartment, and Biscuit can come. Miso too, in a carrier, furious.", {"valence": 0.5, "arousal": 0.7}),
    ("maya-flight-berlin", "2025-08-14", "Flight LH 1173 Porto to Berlin on 18 August, 11:05. Pets go as checked baggage in the hold; booking reference QX7P2L.", {}),
    ("maya-moved-berlin", "2025-08-20", "I moved to Berlin two days ago. Neukölln, fourth floor, no lift. Biscuit is fine; Miso has not left the wardrobe.", {"valence": 0.2, "arousal": 0.7}),
    ("maya-anmeldung", "2025-08-27", "Anmeldung appointment at the Bürgeramt Neukölln on 3 September at 10:20. Bring passport, lease, and the Wohnungsgeberbestätigung the landlord signed.", {"type": "prospective"}),
    ("maya-berlin-lonely", "2025-09-06", "Berlin is lonely in a way Lisbon never was. Nobody says good morning in the stairwell. Biscuit is my whole social life.", {"valence": -0.6, "arousal": 0.3}),
    ("maya-doctor-berlin", "2025-09-15", "Registered with a GP in Berlin, Dr. Ilse Brunnhuber on Karl-Marx-Straße. Told her about the penicillin allergy; she wrote it in red on my file.", {}),
    ("maya-german-class", "2025-09-22", "I study at the Volkshochschule Neukölln now, German A1 on Monday and Wednesday evenings. Our teacher makes us sing about furniture.", {"valence": 0.4, "arousal": 0.4}),
    ("maya-berlin-friends", "2025-10-04", "Went bouldering with people from German class. Lena from Rostock invited me to her birthday next week. Berlin feels a bit warmer.", {"valence": 0.7, "arousal": 0.6}),
    ("maya-promotion", "2025-10-16", "Efua told me I'm being promoted to lead designer for the driver app from November. I called my mum from the office toilet.", {"valence": 0.9, "arousal": 0.8}),
    ("maya-journal-oct", "2025-10-26",
     "Sunday notes. Heating came on in the building, finally. The driver app research readout went well; the ops team cared most about the offline mode. "
     "Bought a proper winter coat at a second-hand shop in Kreuzberg for 45 euros. "
     "Biscuit's microchip details still list the Porto address, so I need to update the registry before anything happens. "
     "Read half a novel about a lighthouse keeper and fell asleep on the sofa twice.", {}),
    ("maya-miso-checkup", "2025-11-05", "Miso's six-month blood test in Berlin: kidney values stable. The new vet speaks English and gave Biscuit a biscuit, which he found very on-brand.", {"valence": 0.6}),
    ("maya-inv-21340", "2025-11-12", "Side project: sent invoice INV-21340 to the Casa Feliz bakery for their new Porto shop signage, 900 euros.", {}),
    ("maya-winter-plan", "2025-11-22", "Plan for December: visit my aunt in Coimbra for Christmas, fly back on the 28th, and don't open Linear for a week.", {"type": "prospective"}),
    # Near-duplicates and notes the assistant wrote down twice.
    ("maya-oat-milk-dup", "2024-09-02", "Coffee order reminder: oat milk flat white, no sugar.", {"type": "semantic"}),
    ("maya-rent-reminder-1", "2025-02-01", "Remind me to pay rent to Aurelio Vantongeren by the 5th; transfer reference BONF-3B.", {"type": "prospective"}),
    ("maya-rent-reminder-2", "2025-03-01", "Remind me to pay the Porto rent by the 5th, same reference as always.", {"type": "prospective"}),
    ("maya-rent-reminder-3", "2025-04-01", "Rent to Aurelio Vantongeren due on the 5th (BONF-3B).", {"type": "prospective"}),
    # Superseded notes, kept but inactive.
    ("maya-phone-old", "2024-06-03", "My phone number is +351 912 447 210.", {"type": "semantic", "is_active": False}),
    ("maya-phone-new", "2025-08-22", "New German number: +49 1523 880 4471. The Portuguese one is gone.", {"type": "semantic"}),
    ("maya-wrong-allergy", "2024-06-09", "Allergy note (mistyped, corrected later): amoxicillin only.", {"type": "semantic", "is_active": False}),
    # More everyday texture.
    ("maya-yoga", "2024-08-20", "Tried a yoga class in Príncipe Real. The teacher kept saying 'soften your jaw'. I did not know my jaw was hard.", {"valence": 0.3}),
    ("maya-bike", "2024-08-28", "My bike got a flat on the cobbles of Rua dos Remédios. Walked it home uphill in 34 degrees.", {"valence": -0.4, "arousal": 0.5}),
    ("maya-font-obsession", "2024-10-20", "Spent the evening comparing three geometric sans fonts for the ferry signage. Settled on the one whose lowercase 'a' looks like a tiny boat.", {"valence": 0.4}),
    ("maya-mom-call", "2024-11-10", "Mum called from Lagos; the generator at home broke again and Dad insists on fixing it himself.", {"valence": -0.1}),
    ("maya-tax", "2025-03-28", "Portuguese tax return: the freelance income from Casa Feliz and Halvorsen & Brandt goes under category B. Accountant is Rui, charges 120 euros.", {"type": "procedural"}),
    ("maya-porto-book-club", "2025-04-17", "Joined a book club in a bar in Bonfim. This month is a Brazilian novel about a family and a cursed fig tree.", {"valence": 0.5}),
    ("maya-ferry-launch", "2025-05-27", "The ferry company launched the new ticket flow. Mobile conversion up 22 percent in the first week. Joana sent me the dashboard screenshot.", {"valence": 0.8, "arousal": 0.6}),
    ("maya-heatwave", "2025-07-12", "Heatwave in Porto, 41 degrees. Biscuit refused to walk further than the corner; we spent the afternoon on the tiled kitchen floor.", {"valence": -0.2, "arousal": 0.3}),
    ("maya-goodbye-porto", "2025-08-16", "Farewell dinner with the book club at the tasca on Rua do Heroísmo. They gave me a tile with a dog painted on it.", {"valence": 0.6, "arousal": 0.5}),
    ("maya-berlin-bike", "2025-09-28", "Bought a used city bike in Berlin for 180 euros from a man who insisted on showing me every gear.", {}),
    ("maya-offline-mode", "2025-10-09", "Driver app decision: we go with offline-first for the delivery list and queue the proof-of-delivery photos, uploading when the signal returns.", {"type": "semantic"}),
    ("maya-design-system", "2025-11-18", "Started the Northwind design system audit: 31 shades of blue, 14 button styles, and a tooltip nobody can dismiss.", {"valence": -0.1}),
]

# Paperwork: many look-alike invoice, order and booking notes. An embedding sees them as the same
# kind of note; only the exact number tells them apart (the case for BM25).
TRACES += [
    ("maya-inv-20712", "2024-06-20", "Invoice INV-20712 to the ferry company for the discovery workshop, 2,100 euros, net 30.", {}),
    ("maya-inv-20712-paid", "2024-07-22", "Ferry company paid INV-20712 after their finance team asked for a copy of my NIF.", {}),
    ("maya-inv-20790", "2024-07-16", "Invoice INV-20790 to a yoga studio in Príncipe Real for a logo refresh, 450 euros.", {}),
    ("maya-inv-20790-chase", "2024-08-30", "Polite chaser sent for INV-20790; the yoga studio owner says she's on retreat until September.", {"valence": -0.2}),
    ("maya-inv-20815", "2024-08-12", "INV-20815 sent to a wine shop in Chiado for shelf labels, 380 euros, due on receipt.", {}),
    ("maya-inv-20902", "2024-09-12", "Invoice INV-20902 to Casa Feliz for the summer menu refresh, 520 euros.", {}),
    ("maya-inv-20955", "2024-10-22", "Sent INV-20955 for the Chiado wine shop's Christmas window, 610 euros, net 15.", {}),
    ("maya-inv-20990", "2024-12-09", "Invoice INV-20990 to the yoga studio for class-schedule posters, 260 euros; she paid by MB Way the same day.", {}),
    ("maya-inv-21077", "2025-03-11", "Last freelance invoice before Northwind: INV-21077 to Casa Feliz for takeaway bags, 300 euros.", {}),
    ("maya-inv-21150", "2025-05-30", "Invoice INV-21150 to the ferry company for phase two design QA, 1,980 euros, through Coupa again.", {}),
    ("maya-inv-21150-coupa", "2025-06-20", "Coupa rejected INV-21150 because the VAT line was rounded differently; resubmitted with two decimals.", {"valence": -0.3}),
    ("maya-order-ikea", "2025-01-14", "IKEA order 1187-4420 for the Porto flat: bookshelf, two lamps, a rug Biscuit will later destroy. Delivery Saturday.", {}),
    ("maya-order-ikea-missing", "2025-01-20", "IKEA order 1187-4420 arrived without the shelf pins. Customer service promised a bag of them by post.", {"valence": -0.3}),
    ("maya-order-vet-food", "2025-05-22", "Ordered kidney-support cat food for Miso online, order 88-5120-PT, and a harness for Biscuit.", {}),
    ("maya-order-berlin-desk", "2025-09-02", "Ordered a standing desk for the Berlin flat, order DE-77031, delivery 'within 3 weeks', which in Germany apparently means six.", {}),
    ("maya-order-berlin-desk-late", "2025-10-08", "Standing desk order DE-77031 still not here. Customer service says a missing part from the factory.", {"valence": -0.4}),
    ("maya-parcel-customs", "2025-10-20", "A parcel from my aunt is stuck at customs in Berlin, tracking number RR448120935PT. I have to collect it at the Zollamt with the receipt.", {"valence": -0.3}),
    ("maya-booking-coimbra", "2025-11-25", "Train to Coimbra booked for 22 December, CP booking 4471-0928, seat 42 in coach 3.", {"type": "prospective"}),
    ("maya-flight-christmas", "2025-11-26", "Flight TP571 Berlin to Lisbon on 21 December, booking reference ZK4M9W, then train to Coimbra.", {"type": "prospective"}),
    ("maya-flight-dup", "2024-08-06", "Madrid trip confirmed: TP1351, 19 September, seat by the window.", {}),
    ("maya-hotel-madrid", "2024-08-07", "Hotel in Madrid for the meetup: Room Mate Alba near Huertas, confirmation 55120983.", {}),
    ("maya-insurance", "2025-08-25", "German health insurance with TK starts 1 September; membership number A123-445-7781. The card comes by post.", {"type": "semantic"}),
    ("maya-bank-berlin", "2025-08-29", "Opened a German bank account at N26 for the salary; IBAN ends in 4471.", {}),
    ("maya-wifi-error", "2025-09-10", "Berlin internet: the router shows error PPP-691 every evening. The provider says it's an authentication problem and resets the line remotely.", {"valence": -0.4}),
    ("maya-wifi-fixed", "2025-09-18", "PPP-691 is gone after the technician replaced the splitter in the hallway box.", {"valence": 0.3}),
    ("maya-figma-bug", "2025-04-15", "Figma plugin error 'ERR_AUTOLAYOUT_NEST' keeps breaking the driver app components; reported to the plugin author.", {}),
    ("maya-linear-ticket", "2025-10-01", "Linear ticket DRV-482: the delivery list jumps to the top after every scan. Assigned to the mobile team with my recording.", {}),
    ("maya-linear-ticket-2", "2025-10-14", "Linear ticket DRV-517: the proof-of-delivery queue shows 'uploading' forever when a photo fails. Wrote the empty and error states.", {}),
    ("maya-meeting-notes-long", "2025-10-30",
     "Ops sync notes. Everybody agreed the warehouse scanners are old and nobody will replace them this year. "
     "We spent twenty minutes on whether the driver app should show the customer's phone number; legal says only the last four digits. "
     "Efua asked for a one-page summary of the offline research before the board meeting. "
     "Buried at the end: the Hamburg depot wants to pilot the new delivery list in January, with twenty drivers. "
     "Next sync in two weeks; I am bringing pastries this time.", {}),
    ("maya-weekly-porto", "2025-04-27",
     "Weekly notes from Porto. Northwind's quarterly planning ate three days, and I still don't understand the new OKR format. "
     "Biscuit's first bath went about as well as expected. "
     "My aunt sent a parcel of chouriço and a card. "
     "In between everything, Tomasz mentioned that the Berlin operations team has been complaining about the driver app for months. "
     "Finished the lighthouse novel; the ending was sad but fair.", {}),
]
