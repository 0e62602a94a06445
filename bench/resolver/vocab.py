"""The words the synthetic catalogue is made of: scholarly phrases per field, names, journals."""

from __future__ import annotations

# Per field: methods/subjects, objects, settings, and the adjectives that qualify them. Titles are built
# from templates over these lists, so two works share phrases as real titles of one field do.
FIELDS: dict[str, dict[str, list[str]]] = {
    "ml": {
        "method": [
            "deep residual learning", "attention mechanisms", "graph neural networks", "contrastive learning",
            "variational autoencoders", "diffusion models", "transformer architectures", "meta-learning",
            "federated learning", "reinforcement learning", "self-supervised pretraining", "knowledge distillation",
            "mixture-of-experts models", "pipeline parallelism", "low-rank adaptation", "gradient checkpointing",
            "stochastic gradient descent", "Bayesian optimization", "neural architecture search", "dropout",
            "batch normalization", "sparse attention", "recurrent neural networks", "kernel methods",
            "Gaussian processes", "random forests", "support vector machines", "active learning",
            "curriculum learning", "adversarial training", "quantization-aware training", "model pruning",
            "instruction tuning", "retrieval-augmented generation", "policy gradient methods", "Q-learning",
            "normalizing flows", "energy-based models", "capsule networks", "spiking neural networks",
        ],
        "object": [
            "image recognition", "machine translation", "language modeling", "speech recognition",
            "object detection", "semantic segmentation", "question answering", "code generation",
            "protein structure prediction", "recommendation systems", "time series forecasting",
            "anomaly detection", "few-shot classification", "text summarization", "visual reasoning",
            "robotic manipulation", "autonomous driving", "molecular property prediction", "tabular data",
            "large language models", "point clouds", "video understanding", "dialogue systems",
            "named entity recognition", "sentiment analysis", "graph classification", "link prediction",
        ],
        "setting": [
            "at scale", "with limited labels", "on edge devices", "under distribution shift",
            "in the wild", "with noisy labels", "across domains", "for low-resource languages",
            "with billions of parameters", "in non-stationary environments", "on commodity hardware",
        ],
        "adj": [
            "scalable", "efficient", "robust", "interpretable", "unsupervised", "hierarchical", "sparse",
            "memory-efficient", "provably convergent", "differentiable", "multimodal", "lightweight",
            "distributed", "causal", "generative", "adaptive", "trustworthy", "fair",
        ],
    },
    "physics": {
        "method": [
            "quantum Monte Carlo simulations", "density functional theory", "renormalization group analysis",
            "angle-resolved photoemission spectroscopy", "neutron scattering", "tensor network methods",
            "molecular dynamics", "lattice gauge theory", "ultrafast pump-probe spectroscopy",
            "scanning tunneling microscopy", "exact diagonalization", "dynamical mean-field theory",
            "cavity quantum electrodynamics", "optical lattice experiments", "muon spin rotation",
            "X-ray diffraction", "nuclear magnetic resonance", "Raman spectroscopy", "perturbation theory",
        ],
        "object": [
            "topological insulators", "high-temperature superconductors", "quantum spin liquids",
            "Bose-Einstein condensates", "graphene bilayers", "Weyl semimetals", "dark matter halos",
            "gravitational waves", "neutrino oscillations", "the quark-gluon plasma", "magnetic skyrmions",
            "Rydberg atoms", "trapped ions", "superconducting qubits", "charge density waves",
            "frustrated magnets", "heavy fermion compounds", "the cosmic microwave background",
            "plasma turbulence", "thin ferroelectric films", "Majorana zero modes", "exciton condensates",
            "the Hubbard model", "the Ising model", "quantum dots", "photonic crystals",
        ],
        "setting": [
            "at finite temperature", "in two dimensions", "under high pressure", "in strong magnetic fields",
            "near a quantum critical point", "out of equilibrium", "at low energies", "in the thermodynamic limit",
            "with disorder", "in the strong-coupling regime", "at the nanoscale",
        ],
        "adj": [
            "anomalous", "emergent", "nonlinear", "coherent", "topological", "critical", "collective",
            "long-range", "chiral", "fractional", "nonequilibrium", "giant", "tunable", "universal",
        ],
    },
    "biology": {
        "method": [
            "single-cell RNA sequencing", "CRISPR-Cas9 screening", "genome-wide association studies",
            "cryo-electron microscopy", "chromatin immunoprecipitation", "phylogenetic analysis",
            "live-cell imaging", "mass spectrometry proteomics", "metagenomic sequencing",
            "spatial transcriptomics", "optogenetic stimulation", "lineage tracing", "comparative genomics",
            "ribosome profiling", "long-read sequencing", "flow cytometry", "population genetics",
        ],
        "object": [
            "gene regulatory networks", "the gut microbiome", "stem cell differentiation", "neural circuits",
            "plant immunity", "bacterial biofilms", "mitochondrial dynamics", "protein folding",
            "cell cycle control", "the circadian clock", "synaptic plasticity", "antibiotic resistance",
            "embryonic development", "coral reef ecosystems", "insect pollinators", "viral evolution",
            "DNA repair", "autophagy", "transcription factor binding", "epigenetic inheritance",
            "Arabidopsis thaliana", "Drosophila melanogaster", "zebrafish regeneration", "yeast metabolism",
        ],
        "setting": [
            "in vivo", "in mouse models", "across species", "during development", "under stress",
            "in human populations", "at single-cell resolution", "in natural populations", "in the aging brain",
        ],
        "adj": [
            "conserved", "dynamic", "heritable", "context-dependent", "cell-type-specific", "evolutionary",
            "systematic", "functional", "rapid", "widespread", "novel", "divergent",
        ],
    },
    "medicine": {
        "method": [
            "randomized controlled trials", "a prospective cohort study", "a systematic review and meta-analysis",
            "machine learning risk prediction", "magnetic resonance imaging", "a multicentre observational study",
            "immunotherapy", "telemedicine interventions", "genomic screening", "mendelian randomization",
            "a cross-sectional survey", "positron emission tomography", "a retrospective analysis",
            "a double-blind placebo-controlled trial", "real-world evidence",
        ],
        "object": [
            "type 2 diabetes", "heart failure", "breast cancer", "COVID-19", "chronic kidney disease",
            "major depressive disorder", "Alzheimer's disease", "sepsis", "stroke", "asthma",
            "hypertension", "tuberculosis", "malaria", "obesity", "colorectal cancer", "atrial fibrillation",
            "HIV infection", "rheumatoid arthritis", "Parkinson's disease", "postoperative delirium",
            "childhood leukaemia", "influenza vaccination", "opioid use disorder", "preterm birth",
        ],
        "setting": [
            "in older adults", "in children", "in primary care", "in low-income countries",
            "in intensive care units", "in pregnant women", "after cardiac surgery", "in a national registry",
            "during the pandemic", "in sub-Saharan Africa", "in hospitalized patients",
        ],
        "adj": [
            "long-term", "early", "comparative", "clinical", "adverse", "cost-effective", "global",
            "sex-specific", "population-based", "pragmatic", "personalized", "preventive",
        ],
    },
    "chemistry": {
        "method": [
            "asymmetric catalysis", "photoredox catalysis", "total synthesis", "electrochemical reduction",
            "atomic layer deposition", "solid-state NMR", "time-resolved spectroscopy", "click chemistry",
            "high-throughput screening", "ab initio calculations", "C-H activation", "flow chemistry",
            "supramolecular assembly", "hydrothermal synthesis", "X-ray absorption spectroscopy",
        ],
        "object": [
            "metal-organic frameworks", "perovskite solar cells", "lithium-ion batteries", "covalent organic frameworks",
            "single-atom catalysts", "carbon dioxide", "nitrogen fixation", "ionic liquids", "polymer electrolytes",
            "gold nanoparticles", "zeolites", "hydrogen evolution", "water oxidation", "organic semiconductors",
            "chiral amines", "natural products", "two-dimensional materials", "conjugated polymers",
            "transition metal dichalcogenides", "fluorinated compounds", "quantum dots", "hydrogels",
        ],
        "setting": [
            "at room temperature", "under visible light", "in aqueous media", "under mild conditions",
            "in the gas phase", "at the solid-liquid interface", "on the gram scale", "in confined spaces",
        ],
        "adj": [
            "highly selective", "stable", "porous", "bifunctional", "enantioselective", "sustainable",
            "tunable", "efficient", "earth-abundant", "self-healing", "redox-active", "catalytic",
        ],
    },
    "economics": {
        "method": [
            "a structural model", "difference-in-differences estimation", "a natural experiment",
            "instrumental variables", "a dynamic stochastic general equilibrium model", "field experiments",
            "regression discontinuity", "panel data analysis", "a search and matching model",
            "machine learning forecasts", "a quantitative trade model", "survey evidence",
        ],
        "object": [
            "monetary policy", "income inequality", "labor market outcomes", "international trade",
            "housing prices", "minimum wages", "firm productivity", "household consumption",
            "sovereign debt", "climate policy", "financial crises", "intergenerational mobility",
            "automation and employment", "credit constraints", "tax evasion", "school choice",
            "inflation expectations", "bank runs", "migration", "market power",
        ],
        "setting": [
            "in developing economies", "in the United States", "in the euro area", "over the business cycle",
            "in the long run", "in China", "after the Great Recession", "in Sub-Saharan Africa", "in Latin America",
        ],
        "adj": [
            "optimal", "heterogeneous", "aggregate", "distributional", "empirical", "dynamic", "strategic",
            "unequal", "persistent", "local", "macroeconomic", "behavioral",
        ],
    },
}

TEMPLATES = [
    "{Method} for {object}",
    "{Adj} {method} for {object}",
    "{Method} for {object} {setting}",
    "{Adj} {object}: {method} {setting}",
    "On the {adj} behaviour of {object}",
    "Towards {adj} {object}",
    "{Object} {setting}",
    "Evidence of {adj} {object} from {method}",
    "Understanding {object} through {method}",
    "{Adj} {object} {setting}: evidence from {method}",
    "A {adj} approach to {object} using {method}",
    "{Object}: a review",
    "{Method} of {object} {setting}",
    "Rethinking {object}",
    "The role of {object} in {object2}",
    "{Adj} {method} of {object} and {object2}",
    "{Object} and {object2}: {adj} perspectives",
    "Learning {adj} representations of {object}",
    "Is {method} all you need for {object}?",
    "What drives {object}? {Method} {setting}",
]

SHORT_TITLES = [
    "{Object}", "{Adj} {object}", "{Method}", "On {object}", "{Object} revisited", "{Method} revisited",
]

SUBTITLES = [
    "a systematic review", "theory and experiment", "a comparative study", "lessons from {object}",
    "evidence from {method}", "a unified framework", "methods and applications", "a case study {setting}",
    "challenges and opportunities", "an empirical analysis", "beyond {object}", "a tutorial",
]

# Family names by culture, with particles, hyphens and accents as sources spell them.
FAMILY = [
    # English, Irish, Scottish
    "Smith", "Johnson", "Williams", "Brown", "Taylor", "Wilson", "Davies", "Evans", "Thomas", "Roberts",
    "O'Brien", "O'Connor", "MacDonald", "McLaughlin", "Campbell", "Stewart", "Murphy", "Kelly", "Walker", "Wright",
    # German, Austrian, Swiss
    "Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker", "Schäfer", "Koch",
    "Hoffmann", "Schröder", "Zimmermann", "Krüger", "Böhm", "von Neumann", "von Braun",
    # Dutch, Flemish
    "van der Berg", "van den Bosch", "de Vries", "van Dijk", "Jansen", "de Jong", "Bakker", "Visser",
    "van der Waals", "ten Brink", "van 't Hoff", "De Smet", "Vermeulen",
    # French
    "Dubois", "Lefèvre", "Moreau", "Laurent", "Girard", "Rousseau", "de la Fontaine", "Lemaître",
    "Durand", "Bonnet", "Fournier", "Chevalier", "d'Alembert",
    # Spanish, Portuguese, Latin American
    "García", "Rodríguez", "Martínez", "López", "González", "Hernández", "Pérez", "Sánchez", "Ramírez",
    "García-López", "Fernández-Ruiz", "de la Cruz", "Gutiérrez", "Silva", "Santos", "Oliveira",
    "Pereira", "Costa", "Conceição", "dos Santos", "Magalhães",
    # Italian
    "Rossi", "Russo", "Ferrari", "Esposito", "Bianchi", "Romano", "Colombo", "Ricci", "Marino", "Di Stefano",
    "De Luca", "Lo Presti",
    # Scandinavian, Finnish
    "Andersson", "Johansson", "Nielsen", "Hansen", "Sørensen", "Ødegård", "Lindqvist", "Virtanen",
    "Mäkinen", "Korhonen", "Jóhannsdóttir", "Åberg",
    # Polish, Czech, Russian, Ukrainian
    "Kowalski", "Nowak", "Wiśniewski", "Wójcik", "Dvořák", "Novák", "Ivanov", "Smirnov", "Kuznetsova",
    "Popov", "Sokolov", "Shevchenko", "Kovalenko",
    # Greek, Turkish, Hungarian
    "Papadopoulos", "Georgiou", "Yılmaz", "Kaya", "Demir", "Çelik", "Şahin", "Nagy", "Kovács", "Szabó",
    # Arabic, Persian, Hebrew
    "Al-Hassan", "El-Sayed", "Haddad", "Khalil", "Mansour", "Hosseini", "Rezaei", "Moradi", "Cohen", "Levi",
    "Ben-David", "Abu-Salem",
    # South Asian
    "Sharma", "Patel", "Gupta", "Singh", "Kumar", "Reddy", "Iyer", "Chatterjee", "Banerjee", "Rao",
    "Krishnan", "Mukherjee", "Khan", "Rahman", "Chowdhury",
    # Chinese
    "Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Huang", "Zhao", "Wu", "Zhou", "Xu", "Sun", "Ma",
    "Zhu", "Hu", "Guo", "He", "Lin", "Gao", "Luo",
    # Japanese, Korean, Vietnamese
    "Tanaka", "Suzuki", "Takahashi", "Watanabe", "Yamamoto", "Nakamura", "Kobayashi", "Sato", "Itō",
    "Kim", "Lee", "Park", "Choi", "Jung", "Kang", "Nguyen", "Nguyễn", "Trần", "Phạm", "Lê",
    # African
    "Okonkwo", "Adeyemi", "Mensah", "Owusu", "Mwangi", "Ochieng", "Nkosi", "Dlamini", "Diallo", "Traoré",
    "Abebe", "Tesfaye",
]

GIVEN = [
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Elizabeth", "David", "Sarah",
    "Anna", "Thomas", "Emma", "Lukas", "Sophie", "Jan-Willem", "Pieter", "Marie-Claire", "Jean-Pierre",
    "François", "Hélène", "José", "María José", "Juan Carlos", "Ana", "João", "Luís", "Giulia", "Marco",
    "Francesca", "Lars", "Ingrid", "Søren", "Åsa", "Mikko", "Katarzyna", "Piotr", "Jiří", "Olga", "Dmitri",
    "Yuliia", "Nikolaos", "Eleni", "Mehmet", "Ayşe", "Zoltán", "Ahmed", "Fatima", "Omar", "Leila",
    "Reza", "Maryam", "Yael", "Avi", "Priya", "Rahul", "Anil", "Lakshmi", "Arjun", "Nusrat", "Wei",
    "Xiaoming", "Li", "Jing", "Hao", "Yu-Ting", "Zhi-Qiang", "Mei", "Hiroshi", "Yuki", "Kenji", "Akiko",
    "Min-jun", "Ji-woo", "Seo-yeon", "Thanh", "Minh", "Chinedu", "Adaeze", "Kwame", "Ama", "Wanjiru",
    "Thabo", "Aminata", "Abebe", "Selam", "Christopher", "Alexander", "Olivia", "Noah", "Chloé",
    "Matthias", "Jürgen", "Renée", "Ignacio", "Björn", "Zoë", "Siobhán", "Eoin",
]

# (full name, ISO4-like abbreviation, first volume's year, field, uses article numbers)
JOURNALS: list[tuple[str, str, int, str, bool]] = [
    ("Physical Review Letters", "Phys. Rev. Lett.", 1958, "physics", True),
    ("Physical Review B", "Phys. Rev. B", 1970, "physics", True),
    ("Physical Review E", "Phys. Rev. E", 1993, "physics", True),
    ("Reviews of Modern Physics", "Rev. Mod. Phys.", 1929, "physics", False),
    ("Applied Physics Letters", "Appl. Phys. Lett.", 1962, "physics", True),
    ("Journal of Applied Physics", "J. Appl. Phys.", 1931, "physics", True),
    ("The Journal of Chemical Physics", "J. Chem. Phys.", 1933, "physics", True),
    ("Physics of Fluids", "Phys. Fluids", 1958, "physics", True),
    ("Nature Physics", "Nat. Phys.", 2005, "physics", False),
    ("Journal of High Energy Physics", "J. High Energy Phys.", 1997, "physics", False),
    ("Journal of the American Chemical Society", "J. Am. Chem. Soc.", 1879, "chemistry", False),
    ("Angewandte Chemie International Edition", "Angew. Chem. Int. Ed.", 1962, "chemistry", False),
    ("ACS Nano", "ACS Nano", 2007, "chemistry", False),
    ("Nano Letters", "Nano Lett.", 2001, "chemistry", False),
    ("Chemistry of Materials", "Chem. Mater.", 1989, "chemistry", False),
    ("The Journal of Organic Chemistry", "J. Org. Chem.", 1936, "chemistry", False),
    ("ACS Catalysis", "ACS Catal.", 2011, "chemistry", False),
    ("Inorganic Chemistry", "Inorg. Chem.", 1962, "chemistry", False),
    ("Journal of Catalysis", "J. Catal.", 1962, "chemistry", False),
    ("Electrochimica Acta", "Electrochim. Acta", 1959, "chemistry", False),
    ("Chemical Engineering Journal", "Chem. Eng. J.", 1970, "chemistry", True),
    ("Journal of Power Sources", "J. Power Sources", 1976, "chemistry", True),
    ("Nature", "Nature", 1869, "biology", False),
    ("Science", "Science", 1880, "biology", False),
    ("Cell", "Cell", 1974, "biology", False),
    ("Proceedings of the National Academy of Sciences", "Proc. Natl. Acad. Sci. U.S.A.", 1915, "biology", False),
    ("PLoS Biology", "PLoS Biol.", 2003, "biology", True),
    ("eLife", "eLife", 2012, "biology", True),
    ("Nucleic Acids Research", "Nucleic Acids Res.", 1974, "biology", False),
    ("Molecular Biology and Evolution", "Mol. Biol. Evol.", 1983, "biology", False),
    ("Current Biology", "Curr. Biol.", 1991, "biology", False),
    ("Journal of Theoretical Biology", "J. Theor. Biol.", 1961, "biology", False),
    ("Nature Communications", "Nat. Commun.", 2010, "biology", True),
    ("Scientific Reports", "Sci. Rep.", 2011, "biology", True),
    ("The New England Journal of Medicine", "N. Engl. J. Med.", 1812, "medicine", False),
    ("The Lancet", "Lancet", 1823, "medicine", False),
    ("JAMA", "JAMA", 1883, "medicine", False),
    ("BMJ", "BMJ", 1840, "medicine", True),
    ("PLoS Medicine", "PLoS Med.", 2004, "medicine", True),
    ("Annals of Internal Medicine", "Ann. Intern. Med.", 1927, "medicine", False),
    ("The Lancet Oncology", "Lancet Oncol.", 2000, "medicine", False),
    ("Journal of Clinical Oncology", "J. Clin. Oncol.", 1983, "medicine", False),
    ("Diabetes Care", "Diabetes Care", 1978, "medicine", False),
    ("American Journal of Epidemiology", "Am. J. Epidemiol.", 1921, "medicine", False),
    ("International Journal of Cardiology", "Int. J. Cardiol.", 1981, "medicine", False),
    ("BMC Public Health", "BMC Public Health", 2001, "medicine", True),
    ("Journal of Machine Learning Research", "J. Mach. Learn. Res.", 2000, "ml", False),
    ("IEEE Transactions on Pattern Analysis and Machine Intelligence", "IEEE Trans. Pattern Anal. Mach. Intell.", 1979, "ml", False),
    ("Neural Computation", "Neural Comput.", 1989, "ml", False),
    ("Machine Learning", "Mach. Learn.", 1986, "ml", False),
    ("Neural Networks", "Neural Netw.", 1988, "ml", False),
    ("Artificial Intelligence", "Artif. Intell.", 1970, "ml", True),
    ("Pattern Recognition", "Pattern Recognit.", 1968, "ml", True),
    ("IEEE Transactions on Neural Networks and Learning Systems", "IEEE Trans. Neural Netw. Learn. Syst.", 1990, "ml", False),
    ("Transactions of the Association for Computational Linguistics", "Trans. Assoc. Comput. Linguist.", 2013, "ml", False),
    ("Nature Machine Intelligence", "Nat. Mach. Intell.", 2019, "ml", False),
    ("Neurocomputing", "Neurocomputing", 1989, "ml", False),
    ("American Economic Review", "Am. Econ. Rev.", 1911, "economics", False),
    ("Econometrica", "Econometrica", 1933, "economics", False),
    ("The Quarterly Journal of Economics", "Q. J. Econ.", 1886, "economics", False),
    ("Journal of Political Economy", "J. Polit. Econ.", 1892, "economics", False),
    ("The Review of Economic Studies", "Rev. Econ. Stud.", 1933, "economics", False),
    ("Journal of Monetary Economics", "J. Monet. Econ.", 1975, "economics", False),
    ("Journal of Development Economics", "J. Dev. Econ.", 1974, "economics", False),
    ("Journal of Public Economics", "J. Public Econ.", 1972, "economics", True),
    ("Journal of Econometrics", "J. Econom.", 1973, "economics", False),
    ("Economic Journal", "Econ. J.", 1891, "economics", False),
]

# Proceedings: (series full name, abbreviation, first year, field)
PROCEEDINGS: list[tuple[str, str, int, str]] = [
    ("Advances in Neural Information Processing Systems", "Adv. Neural Inf. Process. Syst.", 1988, "ml"),
    ("Proceedings of the International Conference on Machine Learning", "Proc. Int. Conf. Mach. Learn.", 1995, "ml"),
    ("Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition", "Proc. IEEE/CVF Conf. Comput. Vis. Pattern Recognit.", 2000, "ml"),
    ("Proceedings of the AAAI Conference on Artificial Intelligence", "Proc. AAAI Conf. Artif. Intell.", 1990, "ml"),
    ("Proceedings of the Annual Meeting of the Association for Computational Linguistics", "Proc. Annu. Meet. Assoc. Comput. Linguist.", 1985, "ml"),
    ("Proceedings of the International Conference on Learning Representations", "Proc. Int. Conf. Learn. Represent.", 2014, "ml"),
    ("SC20: International Conference for High Performance Computing, Networking, Storage and Analysis", "SC20", 2020, "ml"),
    ("AIP Conference Proceedings", "AIP Conf. Proc.", 1970, "physics"),
    ("Journal of Physics: Conference Series", "J. Phys.: Conf. Ser.", 2004, "physics"),
]

BOOKS: dict[str, list[str]] = {
    "ml": ["Handbook of Machine Learning", "Deep Learning: Foundations and Concepts", "Lecture Notes in Computer Science"],
    "physics": ["Springer Series in Solid-State Sciences", "Handbook of Magnetism and Advanced Magnetic Materials"],
    "biology": ["Methods in Molecular Biology", "Current Topics in Developmental Biology"],
    "medicine": ["Oxford Textbook of Medicine", "Handbook of Clinical Neurology"],
    "chemistry": ["Comprehensive Organic Synthesis", "Topics in Current Chemistry"],
    "economics": ["Handbook of Labor Economics", "Handbook of Development Economics"],
}

PREFIX = {
    "physics": ["10.1103", "10.1063", "10.1088"],
    "chemistry": ["10.1021", "10.1002", "10.1016"],
    "biology": ["10.1038", "10.1126", "10.1016", "10.1371", "10.7554"],
    "medicine": ["10.1056", "10.1016", "10.1001", "10.1136", "10.1371"],
    "ml": ["10.1109", "10.1162", "10.1016", "10.1007", "10.5555"],
    "economics": ["10.1257", "10.3982", "10.1093", "10.1086", "10.1016"],
}
